/* IREE parameter archive (.irpa, format version 0) reader. Layout (all
 * little-endian, packed):
 *   header: magic "IRPA" u32, version_major u16, version_minor u16,
 *           header_size u64, next_header_offset u64, flags u64,
 *           entry_count u64, entry_segment {offset, length},
 *           metadata_segment {offset, length}, storage_segment {offset, length}
 *   entry:  entry_size u64, type u32, flags u64, name {offset, length},
 *           metadata {offset, length}, minimum_alignment u64, then
 *           SPLAT: length u64, pattern[16], pattern_length u8
 *           DATA:  storage {offset, length}
 * Segment offsets are relative to the header, names to the metadata
 * segment, data to the storage segment. Entries are 16-byte aligned.
 * Archives chained by next_header_offset are followed. The format records
 * no dtype or shape, so only the byte size is checked against the graph. */
#include <string.h>
#include "weights.h"

enum { IRPA_HEADER_SIZE = 88, IRPA_ENTRY_HEADER = 60, IRPA_SPLAT = 85, IRPA_DATA = 76 };
enum { ENTRY_SKIP = 0, ENTRY_SPLAT = 1, ENTRY_DATA = 2, ENTRY_EXTERNAL = 3 };
#define IRPA_MAGIC 0x41505249u

static uint64_t rd(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* [base + off, base + off + len) inside the file? */
static bool in_file(const rt_mapped_file *f, uint64_t base, uint64_t off, uint64_t len) {
  return base <= f->size && off <= f->size - base && len <= f->size - base - off;
}

bool rt_irpa_is_archive(const rt_mapped_file *f) { return f->size >= 4 && rd(f->data, 4) == IRPA_MAGIC; }

typedef struct irpa_archive {
  uint64_t base, entry_count, entry_off, entry_len, meta_off, meta_len, store_off, store_len;
} irpa_archive;

static ppcc_status read_archive_header(const rt_mapped_file *f, uint64_t base, irpa_archive *a, uint64_t *next,
                                       ppcc_diag *d) {
  if (!in_file(f, base, 0, IRPA_HEADER_SIZE)) return ppcc_error(d, "%s: truncated .irpa header", f->path);
  const unsigned char *h = f->data + base;
  if (rd(h, 4) != IRPA_MAGIC) return ppcc_error(d, "%s: bad .irpa magic", f->path);
  if (rd(h + 4, 2) != 0) return ppcc_error(d, "%s: unsupported .irpa version %d", f->path, (int)rd(h + 4, 2));
  *next = rd(h + 16, 8);
  *a = (irpa_archive){base, rd(h + 32, 8), rd(h + 40, 8), rd(h + 48, 8), rd(h + 56, 8),
                      rd(h + 64, 8), rd(h + 72, 8), rd(h + 80, 8)};
  if (!in_file(f, base, a->entry_off, a->entry_len) || !in_file(f, base, a->meta_off, a->meta_len) ||
      !in_file(f, base, a->store_off, a->store_len))
    return ppcc_error(d, "%s: .irpa segment past the end of the file", f->path);
  return PPCC_OK;
}

static ppcc_status read_entry(rt_weight_index *idx, const irpa_archive *a, const unsigned char *e, uint64_t size,
                              ppcc_diag *d) {
  const rt_mapped_file *f = &idx->file;
  uint32_t type = (uint32_t)rd(e + 8, 4);
  uint64_t name_off = rd(e + 20, 8), name_len = rd(e + 28, 8);
  if (type == ENTRY_SKIP) return PPCC_OK;
  if (name_off > a->meta_len || name_len > a->meta_len - name_off || name_len > 4096)
    return ppcc_error(d, "%s: .irpa entry name past its metadata segment", f->path);
  const char *name = (const char *)f->data + a->base + a->meta_off + name_off;
  if (memchr(name, 0, (size_t)name_len))
    return ppcc_error(d, "%s: .irpa entry name '%s' has a NUL byte inside", f->path, name);
  rt_weight_entry *w = rt_weight_index_add(idx, name, (size_t)name_len);
  if (!w) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (type == ENTRY_SPLAT) {
    if (size < IRPA_SPLAT) return ppcc_error(d, "%s: tensor '%s': truncated splat entry", f->path, w->name);
    w->bytes = rd(e + 60, 8);
    w->pattern_len = e[84];
    memcpy(w->pattern, e + 68, 16);
    if (w->pattern_len < 1 || w->pattern_len > 16 || w->bytes % (uint64_t)w->pattern_len)
      return ppcc_error(d, "%s: tensor '%s': bad splat pattern", f->path, w->name);
    return PPCC_OK;
  }
  if (type != ENTRY_DATA)
    return ppcc_error(d, "%s: tensor '%s': unsupported .irpa entry type %u (external files are not supported)",
                      f->path, w->name, type);
  if (size < IRPA_DATA) return ppcc_error(d, "%s: tensor '%s': truncated data entry", f->path, w->name);
  uint64_t off = rd(e + 60, 8), len = rd(e + 68, 8);
  if (off > a->store_len || len > a->store_len - off)
    return ppcc_error(d, "%s: tensor '%s': data [%llu, +%llu) past the storage segment", f->path, w->name,
                      (unsigned long long)off, (unsigned long long)len);
  w->data = f->data + a->base + a->store_off + off;
  w->bytes = len;
  return PPCC_OK;
}

static ppcc_status read_entries(rt_weight_index *idx, const irpa_archive *a, ppcc_diag *d) {
  const rt_mapped_file *f = &idx->file;
  uint64_t pos = 0;
  for (uint64_t i = 0; i < a->entry_count; i++) {
    if (pos > a->entry_len || a->entry_len - pos < IRPA_ENTRY_HEADER)
      return ppcc_error(d, "%s: .irpa entry %llu past its entry segment", f->path, (unsigned long long)i);
    const unsigned char *e = f->data + a->base + a->entry_off + pos;
    uint64_t size = rd(e, 8);
    if (size < IRPA_ENTRY_HEADER || size > a->entry_len - pos)
      return ppcc_error(d, "%s: .irpa entry %llu has a bad size", f->path, (unsigned long long)i);
    ppcc_status st = read_entry(idx, a, e, size, d);
    if (st) return st;
    pos += (size + 15) & ~(uint64_t)15;
  }
  return PPCC_OK;
}

ppcc_status rt_irpa_index(rt_weight_index *idx, ppcc_diag *d) {
  uint64_t base = 0;
  for (int archives = 0; archives < 1024; archives++) { /* bounded: no cycles */
    irpa_archive a = {0};
    uint64_t next = 0;
    ppcc_status st = read_archive_header(&idx->file, base, &a, &next, d);
    if (!st) st = read_entries(idx, &a, d);
    if (st || next == 0) return st;
    if (next > idx->file.size - base) return ppcc_error(d, "%s: .irpa next header past the end", idx->file.path);
    base += next;
  }
  return ppcc_error(d, "%s: too many chained .irpa archives", idx->file.path);
}
