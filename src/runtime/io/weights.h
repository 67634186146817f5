/* Index of the tensors in a mapped weights file (safetensors or irpa);
 * internal to src/runtime. */
#ifndef PPCC_RT_WEIGHTS_H
#define PPCC_RT_WEIGHTS_H
#include "../rt_internal.h"

typedef struct rt_weight_entry {
  char *name;
  bool has_type;              /* safetensors records dtype and shape; irpa only bytes */
  ppcc_dtype dtype;
  int rank;
  int64_t shape[PPCC_MAX_RANK];
  const unsigned char *data;  /* into the mapping; NULL for a splat */
  uint64_t bytes;
  unsigned char pattern[16];  /* irpa splat entries */
  int pattern_len;
} rt_weight_entry;

typedef struct rt_weight_index {
  rt_mapped_file file;
  int n, cap;
  rt_weight_entry *entries;
  int *table;   /* open-addressing hash of the names: entry index + 1, 0 empty */
  size_t table_size; /* a power of two, more than twice n */
} rt_weight_index;

/* Both parse a mapped file (index->file already mapped) and fill entries,
 * every offset checked against the file size. */
ppcc_status rt_safetensors_index(rt_weight_index *index, ppcc_diag *d);
ppcc_status rt_irpa_index(rt_weight_index *index, ppcc_diag *d);
bool rt_irpa_is_archive(const rt_mapped_file *f);

/* A loader appends its entries with rt_weight_index_add; ppcc_weights_open
 * then calls rt_weight_index_finish, which hashes the names (lookups are
 * O(1)) and refuses a name given twice. */
ppcc_status rt_weight_index_finish(rt_weight_index *index, ppcc_diag *d);
const rt_weight_entry *rt_weight_index_find(const rt_weight_index *index, const char *name);

/* Appends a zeroed entry (name copied); NULL on OOM. */
rt_weight_entry *rt_weight_index_add(rt_weight_index *index, const char *name, size_t name_len);
void rt_weight_index_free(rt_weight_index *index);

#endif
