/* Block decoders (src/ir/quant.c) through the GGUF reader: every format
 * against gguf-py's dequantize (testdata/quant/blocks.gguf, made by
 * tools/make_quant_refs.sh), bit for bit; bad data is a one-line error
 * naming the tensor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../src/runtime/io/io.h"
#include "ppcc/quant.h"
#include "test_support.h"

static const char *const quant_types[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                                          "q2_k", "q3_k", "q4_k", "q5_k", "q6_k"};
#define N_QUANT (int)(sizeof quant_types / sizeof *quant_types)

static rt_gguf open_refs(void) {
  rt_gguf g;
  ppcc_diag d;
  ppcc_diag_init(&d, "refs", NULL);
  ck_assert_msg(rt_gguf_open(t_src_path("testdata/quant/blocks.gguf"), &g, &d) == PPCC_OK, "%s", d.first);
  return g;
}

/* Decodes `name` and compares it with `name`.expect bit for bit. */
static void expect_exact(const rt_gguf *g, const rt_gguf_tensor *t) {
  char ename[160];
  snprintf(ename, sizeof ename, "%s.expect", t->name);
  const rt_gguf_tensor *e = rt_gguf_find_tensor(g, ename);
  ck_assert_ptr_nonnull(e);
  int64_t rows = t->ne[1], cols = t->ne[0];
  ck_assert(e->ne[0] == cols && e->ne[1] == rows && e->format == ppcc_block_format_named("f32"));
  float *got = malloc(sizeof(float) * (size_t)(rows * cols));
  ppcc_diag d;
  ppcc_diag_init(&d, "refs", NULL);
  ck_assert_msg(rt_gguf_dequantize_rows(g->file.path, t, 0, rows, got, &d) == PPCC_OK, "%s", d.first);
  const float *want = (const float *)e->data;
  for (int64_t j = 0; j < rows * cols; j++)
    ck_assert_msg(memcmp(&got[j], &want[j], 4) == 0, "%s[%lld]: %.9g, gguf-py %.9g", t->name, (long long)j, got[j],
                  want[j]);
  /* a later row alone decodes to the same values */
  ck_assert(rt_gguf_dequantize_rows(g->file.path, t, rows - 1, 1, got, &d) == PPCC_OK);
  ck_assert(memcmp(got, want + (rows - 1) * cols, sizeof(float) * (size_t)cols) == 0);
  free(got);
}

START_TEST(every_format_decodes_like_gguf_py) {
  rt_gguf g = open_refs();
  int seen[N_QUANT] = {0}, checked = 0;
  for (int i = 0; i < g.n_tensors; i++) {
    const rt_gguf_tensor *t = &g.tensors[i];
    if (strstr(t->name, ".expect")) continue;
    expect_exact(&g, t);
    checked++;
    for (int k = 0; k < N_QUANT; k++)
      if (strcmp(t->format->name, quant_types[k]) == 0) seen[k]++;
  }
  for (int k = 0; k < N_QUANT; k++) ck_assert_msg(seen[k] > 0, "no %s blocks in the reference file", quant_types[k]);
  ck_assert_int_ge(checked, 17);
  rt_gguf_close(&g);
}
END_TEST

START_TEST(the_table_names_and_sizes) {
  for (int k = 0; k < N_QUANT; k++) {
    const ppcc_block_format *f = ppcc_block_format_named(quant_types[k]);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(ppcc_block_format_of_ggml(f->ggml_type), f);
    ck_assert_str_eq(ppcc_ggml_type_name(f->ggml_type), f->gguf_name);
    ck_assert_int_eq(ppcc_block_bytes(f, 2 * f->block), 2 * f->bytes);
    ck_assert_int_eq(ppcc_block_bytes(f, f->block + 1), -1); /* not whole blocks */
  }
  ck_assert_int_eq(ppcc_block_format_named("q4_k")->bytes, 144);
  ck_assert_int_eq(ppcc_block_format_named("q5_k")->bytes, 176);
  ck_assert_int_eq(ppcc_block_format_named("q3_k")->bytes, 110);
  ck_assert_int_eq(ppcc_block_format_named("q2_k")->bytes, 84);
  ck_assert_str_eq(ppcc_ggml_type_name(13), "Q5_K");
  ck_assert_str_eq(ppcc_ggml_type_name(20), "IQ4_NL");
  ck_assert_ptr_null(ppcc_ggml_type_name(4));
  ck_assert_ptr_null(ppcc_ggml_type_name(1000));
}
END_TEST

/* A NaN or Inf in any scale of any block is reported with the block. */
START_TEST(non_finite_scales_are_errors) {
  rt_gguf g = open_refs();
  for (int k = 0; k < N_QUANT; k++) {
    char name[64];
    snprintf(name, sizeof name, "%s.random", quant_types[k]);
    const rt_gguf_tensor *t = rt_gguf_find_tensor(&g, name);
    ck_assert_ptr_nonnull(t);
    const ppcc_block_format *f = t->format;
    for (int s = 0; s < 3 && f->scale_at[s] >= 0; s++)
      for (int bad = 0; bad < 2; bad++) {
        unsigned char *copy = malloc((size_t)t->bytes);
        memcpy(copy, t->data, (size_t)t->bytes);
        unsigned char *scale = copy + f->bytes + f->scale_at[s]; /* block 1 */
        scale[0] = bad ? 0x00 : 0x01;
        scale[1] = bad ? 0xFC : 0x7E; /* -Inf / NaN */
        rt_gguf_tensor bent = *t;
        bent.data = copy;
        float *out = malloc(sizeof(float) * (size_t)(t->ne[0] * t->ne[1]));
        ck_assert_int_eq(ppcc_block_decode(f, copy, 4, out), 1);
        ppcc_diag d;
        ppcc_diag_init(&d, "x", NULL);
        ck_assert(rt_gguf_dequantize_rows("m.gguf", &bent, 0, t->ne[1], out, &d) != PPCC_OK);
        ck_assert_msg(strstr(d.first, "m.gguf: tensor '") && strstr(d.first, name) && strstr(d.first, "block 1 ") &&
                          strstr(d.first, "NaN or infinite scale") && !strchr(d.first, '\n'),
                      "%s", d.first);
        free(out);
        free(copy);
      }
  }
  rt_gguf_close(&g);
}
END_TEST

START_TEST(unknown_types_are_named) {
  rt_gguf g;
  ppcc_diag d;
  ppcc_diag_init(&d, "x", NULL);
  ck_assert(rt_gguf_open(t_src_path("testdata/quant/iq4_nl.gguf"), &g, &d) != PPCC_OK);
  ck_assert_msg(strstr(d.first, "tensor 'blk.0.ffn_up.weight': GGUF type IQ4_NL (20) is not supported") &&
                    strstr(d.first, "Q5_K") && !strchr(d.first, '\n'),
                "%s", d.first);
}
END_TEST

START_TEST(truncated_blocks_are_errors) {
  size_t len = 0;
  char *bytes = t_read_file(t_src_path("testdata/quant/blocks.gguf"), &len);
  ck_assert_ptr_nonnull(bytes);
  char *dir = t_make_temp_dir("quant");
  const char *path = t_path_in(dir, "cut.gguf");
  t_write_file(path, bytes, len - 100);
  rt_gguf g;
  ppcc_diag d;
  ppcc_diag_init(&d, "x", NULL);
  ck_assert(rt_gguf_open(path, &g, &d) != PPCC_OK);
  ck_assert_msg(strstr(d.first, "tensor '") && strstr(d.first, "truncated") && !strchr(d.first, '\n'), "%s", d.first);
  t_remove_tree(dir);
  free(dir);
  free(bytes);
}
END_TEST

int main(void) {
  Suite *s = suite_create("quant");
  TCase *tc = t_add_tcase(s, "blocks", 0);
  tcase_add_test(tc, every_format_decodes_like_gguf_py);
  tcase_add_test(tc, the_table_names_and_sizes);
  tcase_add_test(tc, non_finite_scales_are_errors);
  tcase_add_test(tc, unknown_types_are_named);
  tcase_add_test(tc, truncated_blocks_are_errors);
  return t_run_suite(s);
}
