/* HF checkpoint directories and GGUF files as parameter sources (see
 * weights_sources.c); ppcc_weights delegates to them. Internal. */
#ifndef PPCC_RT_WEIGHTS_SOURCES_H
#define PPCC_RT_WEIGHTS_SOURCES_H
#include "../rt_internal.h"

typedef struct rt_source rt_source;
/* True for a directory or a file starting with the GGUF magic. */
bool rt_source_handles(const char *path);
rt_source *rt_source_open(const char *path, ppcc_diag *d);
void rt_source_close(rt_source *s);
ppcc_status rt_source_get(rt_source *s, const ppcc_value *p, const void **data, void **owned, ppcc_diag *d);

#endif
