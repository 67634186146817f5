/* .npy reader and writer (NumPy format 1.0 to 3.0, little-endian, C
 * order). The reader maps the file and checks every length against its
 * size before touching the data. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ppcc/io.h"
#include "rt_internal.h"

static const struct {
  const char *descr;
  ppcc_dtype dtype;
} npy_types[] = {
  {"<f4", PPCC_F32}, {"<f2", PPCC_F16}, {"<i8", PPCC_I64}, {"<i4", PPCC_I32},
  {"|i1", PPCC_I8},  {"<i1", PPCC_I8},  {"|b1", PPCC_BOOL},
};

static bool descr_to_dtype(const char *descr, ppcc_dtype *out) {
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (strcmp(descr, npy_types[i].descr) == 0) {
      *out = npy_types[i].dtype;
      return true;
    }
  return false;
}

static const char *dtype_to_descr(ppcc_dtype t) {
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (npy_types[i].dtype == t) return npy_types[i].descr;
  return NULL;
}

/* Finds 'key': in the header dict and returns the text after the colon. */
static const char *dict_value(const char *header, const char *key) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "'%s'", key);
  const char *p = strstr(header, quoted);
  if (!p) return NULL;
  p += strlen(quoted);
  while (isspace((unsigned char)*p)) p++;
  if (*p != ':') return NULL;
  p++;
  while (isspace((unsigned char)*p)) p++;
  return p;
}

static bool parse_descr(const char *header, ppcc_dtype *dtype, char *descr, size_t n) {
  const char *p = dict_value(header, "descr");
  if (!p || *p != '\'') return false;
  const char *end = strchr(p + 1, '\'');
  if (!end || (size_t)(end - p - 1) >= n) return false;
  memcpy(descr, p + 1, (size_t)(end - p - 1));
  descr[end - p - 1] = 0;
  return descr_to_dtype(descr, dtype);
}

/* "(2, 3)", "(5,)", "()" */
static bool parse_shape(const char *header, int *rank, int64_t *shape) {
  const char *p = dict_value(header, "shape");
  if (!p || *p != '(') return false;
  p++;
  *rank = 0;
  for (;;) {
    while (isspace((unsigned char)*p) || *p == ',') p++;
    if (*p == ')') return true;
    if (!isdigit((unsigned char)*p) || *rank == PPCC_MAX_RANK) return false;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || v < 0) return false;
    shape[(*rank)++] = v;
    p = end;
  }
}

/* Header text (NUL-terminated copy) and data offset, bounds-checked. */
static ppcc_status read_header(const rt_mapped_file *f, char **header, size_t *data_offset, ppcc_diag *d) {
  const unsigned char *p = f->data;
  if (f->size < 10 || memcmp(p, "\x93NUMPY", 6) != 0) return ppcc_error(d, "%s: not a .npy file", f->path);
  int major = p[6];
  size_t len, start;
  if (major == 1) {
    len = (size_t)p[8] | (size_t)p[9] << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (f->size < 12) return ppcc_error(d, "%s: truncated .npy header", f->path);
    len = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
    start = 12;
  } else {
    return ppcc_error(d, "%s: unsupported .npy version %d", f->path, major);
  }
  if (len > f->size - start) return ppcc_error(d, "%s: truncated .npy header", f->path);
  *header = malloc(len + 1);
  if (!*header) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  memcpy(*header, p + start, len);
  (*header)[len] = 0;
  *data_offset = start + len;
  return PPCC_OK;
}

static ppcc_status parse_header(const char *path, const char *header, ppcc_dtype *dtype, int *rank,
                                int64_t *shape, ppcc_diag *d) {
  char descr[32] = "";
  if (!dict_value(header, "descr")) return ppcc_error(d, "%s: bad .npy header: no 'descr' key", path);
  if (!parse_descr(header, dtype, descr, sizeof descr))
    return ppcc_error(d, "%s: unsupported .npy dtype '%s' (need <f4, <f2, <i8, <i4, |i1 or |b1)", path, descr);
  const char *fo = dict_value(header, "fortran_order");
  if (!fo) return ppcc_error(d, "%s: bad .npy header: no 'fortran_order' key", path);
  if (strncmp(fo, "False", 5) != 0) return ppcc_error(d, "%s: Fortran-order .npy is not supported", path);
  if (!parse_shape(header, rank, shape)) return ppcc_error(d, "%s: bad .npy shape", path);
  if (ppcc_num_elements(*rank, shape) < 0) return ppcc_error(d, "%s: .npy shape too large", path);
  return PPCC_OK;
}

ppcc_status ppcc_npy_read(const char *path, ppcc_host_tensor *out, ppcc_diag *d) {
  memset(out, 0, sizeof *out);
  rt_mapped_file f;
  ppcc_status st = rt_map_file(path, &f, d);
  if (st) return st;
  char *header = NULL;
  size_t offset = 0;
  ppcc_dtype dtype = PPCC_F32;
  int rank = 0;
  int64_t shape[PPCC_MAX_RANK];
  st = read_header(&f, &header, &offset, d);
  if (!st) st = parse_header(path, header, &dtype, &rank, shape, d);
  if (!st) {
    int64_t bytes = ppcc_num_elements(rank, shape) * ppcc_dtype_size(dtype);
    if ((uint64_t)bytes > f.size - offset)
      st = ppcc_error(d, "%s: truncated: data needs %lld bytes, file has %lld after the header", path,
                      (long long)bytes, (long long)(f.size - offset));
    else if (!ppcc_host_tensor_alloc(out, dtype, rank, shape))
      st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    else if (bytes > 0)
      memcpy(out->data, f.data + offset, (size_t)bytes);
  }
  free(header);
  rt_unmap_file(&f);
  return st;
}

/* Header padded so the data starts at a multiple of 64 bytes. */
static size_t format_header(const ppcc_host_tensor *t, const char *descr, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < t->rank && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, t->rank == 1 ? "%lld," : (i ? ", %lld" : "%lld"),
                            (long long)t->shape[i]);
  if (len < n) len += (size_t)snprintf(buf + len, n - len, "), }");
  while ((10 + len + 1) % 64 != 0 && len + 2 < n) buf[len++] = ' ';
  buf[len++] = '\n';
  return len;
}

ppcc_status ppcc_npy_write_stream(FILE *fp, const char *path, const ppcc_host_tensor *t, ppcc_diag *d) {
  ppcc_dtype dtype = t->dtype == PPCC_BF16 ? PPCC_F32 : t->dtype;
  const char *descr = dtype_to_descr(dtype);
  if (!descr) return ppcc_error(d, "%s: cannot write dtype %s to .npy", path, ppcc_dtype_name(t->dtype));
  char header[512];
  size_t len = format_header(t, descr, header, sizeof header);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff),
                           (unsigned char)(len >> 8)};
  bool ok = fwrite(pre, 1, 10, fp) == 10 && fwrite(header, 1, len, fp) == len;
  int64_t n = ppcc_num_elements(t->rank, t->shape);
  if (ok && t->dtype == PPCC_BF16) { /* numpy has no bf16: widen */
    float buf[256];
    for (int64_t j = 0; ok && j < n; j += 256) {
      int64_t m = n - j < 256 ? n - j : 256;
      rt_to_f32(PPCC_BF16, (const uint16_t *)t->data + j, buf, m);
      ok = fwrite(buf, 4, (size_t)m, fp) == (size_t)m;
    }
  } else if (ok && n > 0) {
    size_t bytes = (size_t)n * (size_t)ppcc_dtype_size(t->dtype);
    ok = fwrite(t->data, 1, bytes, fp) == bytes;
  }
  if (!ok) return ppcc_error(d, "%s: write failed: %s", path, strerror(errno));
  return PPCC_OK;
}

ppcc_status ppcc_npy_write(const char *path, const ppcc_host_tensor *t, ppcc_diag *d) {
  ppcc_outfile f;
  ppcc_status st = ppcc_outfile_open(&f, path, d);
  if (st) return st;
  st = ppcc_npy_write_stream(f.fp, path, t, d);
  if (st) {
    ppcc_outfile_abort(&f);
    return st;
  }
  return ppcc_outfile_commit(&f, d);
}
