/* libFuzzer target: the .npy reader (src/runtime/io/npy.c).
 *
 * npy.c is compiled into this file with rt_map_file replaced by an
 * in-memory "mapping": the input is copied into a heap buffer of exactly
 * its size, so ASan sees any read past the end (an mmap'd file would hide
 * over-reads up to the page boundary). The public functions are renamed so
 * they do not clash with the runtime library's copy.
 *
 * Whatever the reader accepts is written back with the real writer into
 * memory and read again: the round trip must give the same tensor. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define rt_map_file fuzz_map_file
#define rt_unmap_file fuzz_unmap_file
#define ppcc_npy_read fuzz_npy_read
#define ppcc_npy_write fuzz_npy_write
#define ppcc_npy_write_stream fuzz_npy_write_stream
#include "../src/runtime/io/npy.c"

#include "memory_file.h"

static void round_trip(const ppcc_host_tensor *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  if (!mem) return;
  ppcc_diag d;
  ppcc_diag_init(&d, "fuzz.npy", NULL);
  ppcc_status st = ppcc_npy_write_stream(mem, "fuzz.npy", t, &d);
  fclose(mem);
  if (st != PPCC_OK) { /* only bf16 cannot be written as itself */
    fuzz_require_diag(&d, "write");
    free(buf);
    return;
  }
  const uint8_t *saved_data = fuzz_data;
  size_t saved_size = fuzz_size;
  fuzz_data = (const uint8_t *)buf;
  fuzz_size = len;
  ppcc_host_tensor back;
  st = fuzz_npy_read("roundtrip.npy", &back, &d);
  fuzz_data = saved_data;
  fuzz_size = saved_size;
  free(buf);
  if (st != PPCC_OK) {
    fprintf(stderr, "fuzz_npy: cannot read back what the writer wrote: %s\n", d.first);
    abort();
  }
  if (back.dtype != t->dtype || back.rank != t->rank ||
      memcmp(back.shape, t->shape, sizeof(int64_t) * (size_t)t->rank) != 0 || back.bytes != t->bytes ||
      (t->bytes > 0 && memcmp(back.data, t->data, (size_t)t->bytes) != 0)) {
    fprintf(stderr, "fuzz_npy: write/read round trip changed the tensor\n");
    abort();
  }
  ppcc_host_tensor_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_data = data;
  fuzz_size = size;
  ppcc_diag d;
  ppcc_diag_init(&d, "fuzz.npy", NULL);
  ppcc_host_tensor t;
  ppcc_status st = fuzz_npy_read("fuzz.npy", &t, &d);
  if (st != PPCC_OK) {
    fuzz_require_diag(&d, "read");
    return 0;
  }
  round_trip(&t);
  ppcc_host_tensor_free(&t);
  return 0;
}
