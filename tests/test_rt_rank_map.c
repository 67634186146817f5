/* The device -> rank map of MPI runs (ppcc_rank_map, no MPI needed): the
 * default keeps tensor-parallel groups (pipeline stages) whole and spreads
 * stages evenly; --ranks-map is checked entry by entry. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/mpi.h"
#include "test_support.h"

static ppcc_graph *model(const char *rel) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file(rel, &d);
  ck_assert_msg(g, "%s: %s", rel, d.first);
  return g;
}

/* The map as text "0,0,1,1", or the error message. */
static const char *map_of(const char *rel, int ranks, const char *spec) {
  static char out[1100];
  ppcc_graph *g = model(rel);
  int rank_of[64];
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ck_assert_int_le(g->n_devices, 64);
  if (ppcc_rank_map(g, ranks, spec, rank_of, &d) != PPCC_OK) {
    snprintf(out, sizeof out, "error: %s", d.first);
  } else {
    size_t off = 0;
    for (int i = 0; i < g->n_devices; i++) off += (size_t)snprintf(out + off, sizeof out - off, i ? ",%d" : "%d", rank_of[i]);
  }
  ppcc_graph_free(g);
  return out;
}

START_TEST(default_map_keeps_stages_whole) {
  /* ppffn: two TP2 stages {0,1}, {2,3} */
  ck_assert_str_eq(map_of("testdata/models/ppffn.json", 1, NULL), "0,0,0,0");
  ck_assert_str_eq(map_of("testdata/models/ppffn.json", 2, NULL), "0,0,1,1");
  ck_assert_str_eq(map_of("testdata/models/tiny_llama.json", 2, NULL), "0,0,1,1");
  /* pp_chain: four one-device stages, spread evenly */
  ck_assert_str_eq(map_of("testdata/models/pp_chain.json", 2, NULL), "0,0,1,1");
  ck_assert_str_eq(map_of("testdata/models/pp_chain.json", 3, NULL), "0,0,1,2");
  ck_assert_str_eq(map_of("testdata/models/pp_chain.json", 4, NULL), "0,1,2,3");
}
END_TEST

START_TEST(too_many_ranks_is_an_error) {
  const char *e = map_of("testdata/models/ppffn.json", 3, NULL);
  ck_assert_msg(strstr(e, "3 MPI ranks but the model has 2 pipeline stages") && strstr(e, "--ranks-map"), "%s", e);
  e = map_of("testdata/models/tp_ffn.json", 4, NULL);
  ck_assert_msg(strstr(e, "4 MPI ranks for a model with 2 devices"), "%s", e);
  e = map_of("testdata/models/tp_ffn.json", 4, "0,1");
  ck_assert_msg(strstr(e, "4 MPI ranks for a model with 2 devices"), "%s", e);
}
END_TEST

START_TEST(custom_maps) {
  ck_assert_str_eq(map_of("testdata/models/ppffn.json", 4, "0,1,2,3"), "0,1,2,3");
  ck_assert_str_eq(map_of("testdata/models/ppffn.json", 2, "1,0,1,0"), "1,0,1,0");
  ck_assert_str_eq(map_of("testdata/models/ppffn.json", 3, "0,0,0,0"), "0,0,0,0"); /* idle ranks are allowed */
  const char *e = map_of("testdata/models/ppffn.json", 2, "0,2,1,1");
  ck_assert_msg(strstr(e, "device 1 is mapped to rank 2, but only 2 ranks (0..1)"), "%s", e);
  e = map_of("testdata/models/ppffn.json", 2, "0,1,1");
  ck_assert_msg(strstr(e, "has 3 entries but the model has 4 devices"), "%s", e);
  e = map_of("testdata/models/ppffn.json", 2, "0,1,1,1,0");
  ck_assert_msg(strstr(e, "more entries than the model's 4 devices"), "%s", e);
  e = map_of("testdata/models/ppffn.json", 2, "0,-1,1,1");
  ck_assert_msg(strstr(e, "entry 1 is not a rank number"), "%s", e);
  e = map_of("testdata/models/ppffn.json", 2, "0,,1,1");
  ck_assert_msg(strstr(e, "entry 1 is not a rank number"), "%s", e);
  e = map_of("testdata/models/ppffn.json", 2, "1,1,1,1");
  ck_assert_msg(strstr(e, "gives rank 0 no device"), "%s", e);
}
END_TEST

START_TEST(no_mpi_launch_without_launcher_variables) {
  const char *vars[] = {"PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
  ck_assert(!ppcc_mpi_launched());
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  ck_assert(ppcc_mpi_launched());
  unsetenv("OMPI_COMM_WORLD_SIZE");
  ck_assert_int_eq(ppcc_mpi_rank(), 0);
  ck_assert_int_eq(ppcc_mpi_size(), 1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rank_map");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, default_map_keeps_stages_whole);
  tcase_add_test(tc, too_many_ranks_is_an_error);
  tcase_add_test(tc, custom_maps);
  tcase_add_test(tc, no_mpi_launch_without_launcher_variables);
  suite_add_tcase(s, tc);
  return t_run_suite(s);
}
