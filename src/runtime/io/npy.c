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
#include "../rt_internal.h"

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

/* ---------------- header: a Python dict literal ----------------
 * {'descr': STR, 'fortran_order': True|False, 'shape': (INT, ...)}, keys in
 * any order, each exactly once, no other key; then only padding. Parsed
 * token by token (never searched for), so a decoy key, a missing brace or
 * comma, or 'Falsey' are refused, as Python's literal_eval would. */
#define DESCR_MAX 256

typedef struct npy_header {
  const char *text, *p, *path;
  bool has_descr, has_fortran, has_shape, fortran;
  char descr[DESCR_MAX];
  int rank;
  int64_t shape[PPCC_MAX_RANK];
  ppcc_diag *d;
} npy_header;

static void skip_space(npy_header *h) {
  while (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r') h->p++;
}

static long at(const npy_header *h) { return (long)(h->p - h->text); }

static ppcc_status syntax(npy_header *h, const char *what) {
  return ppcc_error(h->d, "%s: bad .npy header: expected %s at byte %ld", h->path, what, at(h));
}

/* 'text' or "text" without escapes (numpy never writes any), copied. */
static ppcc_status parse_string(npy_header *h, char *out, size_t n, size_t *len) {
  char quote = *h->p;
  if (quote != '\'' && quote != '"') return syntax(h, "a quoted string");
  const char *s = ++h->p;
  while (*h->p && *h->p != quote) {
    if ((unsigned char)*h->p < 0x20 || *h->p == '\\')
      return ppcc_error(h->d, "%s: bad .npy header: control character or escape in a string at byte %ld", h->path,
                        at(h));
    h->p++;
  }
  if (*h->p != quote) return syntax(h, "the end of a string");
  *len = (size_t)(h->p - s);
  size_t keep = *len < n ? *len : n - 1;
  memcpy(out, s, keep);
  out[keep] = 0;
  h->p++;
  return PPCC_OK;
}

static ppcc_status parse_bool(npy_header *h, bool *out) {
  const char *s = h->p;
  while (isalnum((unsigned char)*h->p) || *h->p == '_') h->p++;
  size_t n = (size_t)(h->p - s);
  if (n == 4 && memcmp(s, "True", 4) == 0) *out = true;
  else if (n == 5 && memcmp(s, "False", 5) == 0) *out = false;
  else {
    h->p = s;
    return ppcc_error(h->d, "%s: bad .npy header: 'fortran_order' is '%.*s', not True or False", h->path,
                      (int)(n < 16 ? n : 16), s);
  }
  return PPCC_OK;
}

static ppcc_status shape_error(npy_header *h, const char *what) {
  return ppcc_error(h->d, "%s: bad .npy shape: %s at byte %ld", h->path, what, at(h));
}

/* "()", "(5,)", "(2, 3)", "(2, 3,)"; "(5)" is an int in Python, not a tuple. */
static ppcc_status parse_tuple(npy_header *h) {
  if (*h->p != '(') return shape_error(h, "expected '('");
  h->p++;
  h->rank = 0;
  bool comma = false;
  for (;;) {
    skip_space(h);
    if (*h->p == ')') break;
    if (h->rank > 0 && !comma) return shape_error(h, "expected ',' or ')'");
    if (!isdigit((unsigned char)*h->p)) return shape_error(h, "expected a non-negative integer");
    if (*h->p == '0' && isdigit((unsigned char)h->p[1])) return shape_error(h, "leading zero in an integer");
    if (h->rank == PPCC_MAX_RANK) return shape_error(h, "too many dimensions");
    int64_t v = 0;
    while (isdigit((unsigned char)*h->p)) {
      if (v > (INT64_MAX - 9) / 10) return ppcc_error(h->d, "%s: .npy shape too large", h->path);
      v = v * 10 + (*h->p++ - '0');
    }
    h->shape[h->rank++] = v;
    skip_space(h);
    comma = *h->p == ',';
    if (comma) h->p++;
  }
  if (h->rank == 1 && !comma) return shape_error(h, "a 1-tuple needs a trailing comma, as in (5,)");
  h->p++;
  return PPCC_OK;
}

static ppcc_status parse_item(npy_header *h) {
  char key[32];
  size_t len;
  const char *key_at = h->p;
  ppcc_status st = parse_string(h, key, sizeof key, &len);
  if (st) return st;
  skip_space(h);
  if (*h->p != ':') return syntax(h, "':'");
  h->p++;
  skip_space(h);
  bool *seen = len == 5 && strcmp(key, "descr") == 0           ? &h->has_descr
               : len == 13 && strcmp(key, "fortran_order") == 0 ? &h->has_fortran
               : len == 5 && strcmp(key, "shape") == 0          ? &h->has_shape
                                                                : NULL;
  if (!seen)
    return ppcc_error(h->d, "%s: bad .npy header: unexpected key '%.31s' at byte %ld", h->path, key,
                      (long)(key_at - h->text));
  if (*seen)
    return ppcc_error(h->d, "%s: bad .npy header: key '%s' given twice", h->path, key);
  *seen = true;
  if (seen == &h->has_descr) return parse_string(h, h->descr, sizeof h->descr, &len);
  if (seen == &h->has_fortran) return parse_bool(h, &h->fortran);
  return parse_tuple(h);
}

static ppcc_status parse_dict(npy_header *h) {
  h->p = h->text;
  skip_space(h);
  if (*h->p != '{') return syntax(h, "'{'");
  h->p++;
  bool comma = true;
  for (;;) {
    skip_space(h);
    if (*h->p == '}') break;
    if (!*h->p) return syntax(h, "the closing '}'");
    if (!comma) return syntax(h, "',' or '}'");
    ppcc_status st = parse_item(h);
    if (st) return st;
    skip_space(h);
    comma = *h->p == ',';
    if (comma) h->p++;
  }
  h->p++;
  skip_space(h);
  if (*h->p) return syntax(h, "only padding after the closing '}'");
  return PPCC_OK;
}

/* descr as the user can read it: bounded, non-printables as '?'. */
static void printable(const char *s, char *out, size_t n) {
  size_t i = 0;
  for (; s[i] && i + 4 < n; i++) out[i] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ? '?' : s[i];
  if (s[i]) memcpy(out + i, "...", 4);
  else out[i] = 0;
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

static ppcc_status parse_header(const char *path, const char *header, size_t len, ppcc_dtype *dtype, int *rank,
                                int64_t *shape, ppcc_diag *d) {
  if (strlen(header) != len) return ppcc_error(d, "%s: bad .npy header: a NUL byte at byte %zu", path, strlen(header));
  npy_header h = {.text = header, .path = path, .d = d};
  ppcc_status st = parse_dict(&h);
  if (st) return st;
  if (!h.has_descr) return ppcc_error(d, "%s: bad .npy header: no 'descr' key", path);
  char shown[72];
  printable(h.descr, shown, sizeof shown);
  if (strlen(h.descr) >= DESCR_MAX - 1 || !descr_to_dtype(h.descr, dtype))
    return ppcc_error(d, "%s: unsupported .npy dtype '%s' (need <f4, <f2, <i8, <i4, |i1 or |b1)", path, shown);
  if (!h.has_fortran) return ppcc_error(d, "%s: bad .npy header: no 'fortran_order' key", path);
  if (h.fortran) return ppcc_error(d, "%s: Fortran-order .npy is not supported", path);
  if (!h.has_shape) return ppcc_error(d, "%s: bad .npy header: no 'shape' key", path);
  *rank = h.rank;
  memcpy(shape, h.shape, sizeof h.shape);
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
  if (!st) st = parse_header(path, header, offset - (f.data[6] == 1 ? 10 : 12), &dtype, &rank, shape, d);
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
