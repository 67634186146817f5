/* Weights lookup benchmark (not a test): a .safetensors file of N one-
 * element tensors, then ppcc_weights_open and ppcc_weights_get of every
 * tensor in a scrambled order, as `ppcc run` does for a graph of N params.
 * Prints each repetition's seconds, then min and median.
 *
 *   bench_weights [N (default 100000)] [REPS (default 3)] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ppcc/runtime.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static bool write_file(const char *path, int n) {
  size_t cap = (size_t)n * 128 + 64, h = 0;
  char *header = malloc(cap);
  if (!header) return false;
  h += (size_t)snprintf(header, cap, "{");
  for (int i = 0; i < n; i++)
    h += (size_t)snprintf(header + h, cap - h, "%s\"blk.%d.weight\":{\"dtype\":\"I32\",\"shape\":[1],"
                          "\"data_offsets\":[%d,%d]}", i ? "," : "", i, 4 * i, 4 * i + 4);
  h += (size_t)snprintf(header + h, cap - h, "}");
  while ((8 + h) % 8) header[h++] = ' ';
  FILE *f = fopen(path, "wb");
  bool ok = f != NULL;
  for (int i = 0; ok && i < 8; i++) ok = fputc((int)((h >> (8 * i)) & 0xff), f) != EOF;
  ok = ok && fwrite(header, 1, h, f) == h;
  for (int32_t i = 0; ok && i < n; i++) ok = fwrite(&i, 4, 1, f) == 1;
  if (f) ok = fclose(f) == 0 && ok;
  free(header);
  return ok;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100000, reps = argc > 2 ? atoi(argv[2]) : 3;
  if (n < 1 || reps < 1 || reps > 100) {
    fprintf(stderr, "usage: bench_weights [N] [REPS]\n");
    return 2;
  }
  char path[64];
  snprintf(path, sizeof path, "/tmp/bench_weights_%d.safetensors", (int)getpid());
  if (!write_file(path, n)) {
    fprintf(stderr, "bench_weights: cannot write %s\n", path);
    return 1;
  }
  char name[32];
  ppcc_value v = {.name = name, .kind = PPCC_VALUE_PARAM, .dtype = PPCC_I32, .rank = 1, .shape = {1}};
  v.layout = ppcc_layout_unsharded();
  double *t = calloc((size_t)reps, sizeof *t);
  long long checksum = 0;
  for (int r = 0; r < reps; r++) {
    ppcc_diag d;
    ppcc_diag_init(&d, "bench", stderr);
    double t0 = now();
    ppcc_weights *w = ppcc_weights_open(path, &d);
    if (!w) return 1;
    for (int k = 0; k < n; k++) {
      int i = (int)(((long long)k * 7919) % n); /* scrambled: each tensor once if gcd(7919, n) = 1 */
      snprintf(name, sizeof name, "blk.%d.weight", i);
      const void *data;
      void *owned;
      if (ppcc_weights_get(w, &v, &data, &owned, &d) != PPCC_OK) return 1;
      checksum += *(const int32_t *)data;
      free(owned);
    }
    ppcc_weights_close(w);
    t[r] = now() - t0;
    printf("rep %d: %d params looked up among %d tensors in %.3f s\n", r, n, n, t[r]);
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  printf("bench_weights N=%d: min %.3f s, median %.3f s (checksum %lld)\n", n, t[0], t[reps / 2], checksum);
  unlink(path);
  free(t);
  return 0;
}
