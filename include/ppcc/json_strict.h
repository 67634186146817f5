/* JSON read strictly: what cJSON gets wrong or resolves silently is caught
 * before a reader sees the tree. cJSON cuts a string at an escaped NUL
 * (\u0000) and keeps a repeated key as a sibling, the first one found. */
#ifndef PPCC_JSON_STRICT_H
#define PPCC_JSON_STRICT_H
#include <stddef.h>
#include "ppcc/diag.h"

struct cJSON;

typedef enum {
  PPCC_JSON_DUPLICATES_REFUSED, /* ppcc's own formats: an error naming the key */
  PPCC_JSON_LAST_WINS           /* files written by Python (HF): its rule, with a warning */
} ppcc_json_duplicates;

/* Parses text[len] from `path`: an escaped NUL in a string is refused naming
 * the field it is in, a raw NUL byte and invalid JSON too; duplicate keys
 * per `dups`. *out is the tree (cJSON_Delete it) or NULL on error. */
ppcc_status ppcc_json_parse_strict(const char *path, const char *text, size_t len, ppcc_json_duplicates dups,
                                   struct cJSON **out, ppcc_diag *d);

#endif
