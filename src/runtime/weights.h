/* Index of the tensors in a mapped weights file (safetensors or irpa);
 * internal to src/runtime. */
#ifndef PPCC_RT_WEIGHTS_H
#define PPCC_RT_WEIGHTS_H
#include "rt_internal.h"

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
} rt_weight_index;

/* Both parse a mapped file (index->file already mapped) and fill entries,
 * every offset checked against the file size. */
ppcc_status rt_safetensors_index(rt_weight_index *index, ppcc_diag *d);
ppcc_status rt_irpa_index(rt_weight_index *index, ppcc_diag *d);
bool rt_irpa_is_archive(const rt_mapped_file *f);

/* Appends a zeroed entry (name copied); NULL on OOM. */
rt_weight_entry *rt_weight_index_add(rt_weight_index *index, const char *name, size_t name_len);
void rt_weight_index_free(rt_weight_index *index);

#endif
