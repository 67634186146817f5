/* Strict JSON: escaped NULs refused naming the field, duplicate keys
 * refused or resolved like Python (last wins) with a warning. */
#include "ppcc/json_strict.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

/* A raw NUL byte or an escaped NUL in a string, named by its key or by
 * the key of the field it is in (the last string followed by ':'). */
static ppcc_status refuse_escaped_nul(const char *path, const char *text, size_t len, ppcc_diag *d) {
  bool in_string = false;
  size_t start = 0, key_start = 0, key_len = 0;
  bool have_key = false;
  for (size_t i = 0; i < len; i++) {
    char c = text[i];
    if (c == 0) return ppcc_error(d, "%s: the file contains a NUL byte at byte %zu (not valid JSON text)", path, i);
    if (in_string) {
      if (c == '\\' && i + 1 < len) {
        if (len - i >= 6 && memcmp(text + i + 1, "u0000", 5) == 0) {
          /* the string itself is a key if ':' follows it */
          size_t j = i + 1;
          while (j < len && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
          size_t k = j + 1;
          while (k < len && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r')) k++;
          bool is_key = k < len && text[k] == ':';
          char shown[160];
          size_t n = i - start < 64 ? i - start : 64; /* the key up to the NUL */
          if (is_key) {
            char raw[70];
            memcpy(raw, text + start, n), raw[n] = 0;
            ppcc_escape_text(shown, sizeof shown, raw);
            return ppcc_error(d, "%s: key '%s...': escaped NUL (\\u0000) in a key is not supported", path, shown);
          }
          char raw[70];
          size_t m = key_len < 64 ? key_len : 64;
          memcpy(raw, text + key_start, m), raw[m] = 0;
          ppcc_escape_text(shown, sizeof shown, raw);
          if (!have_key) return ppcc_error(d, "%s: escaped NUL (\\u0000) in a string is not supported", path);
          return ppcc_error(d, "%s: field '%s': escaped NUL (\\u0000) in a string is not supported", path, shown);
        }
        i++; /* the escaped character */
      } else if (c == '"') {
        in_string = false;
        size_t k = i + 1;
        while (k < len && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r')) k++;
        if (k < len && text[k] == ':') key_start = start, key_len = i - start, have_key = true;
      }
    } else if (c == '"') {
      in_string = true;
      start = i + 1;
    }
  }
  return PPCC_OK;
}

static int by_key(const void *a, const void *b) {
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  return strcmp(x->string, y->string); /* only equality matters */
}

/* Index of each child in its object, so "last" is the latest in the file. */
static int position_in(const cJSON *obj, const cJSON *item) {
  int i = 0;
  for (const cJSON *c = obj->child; c && c != item; c = c->next) i++;
  return i;
}

/* Recursion is bounded by cJSON's own nesting limit. */
static ppcc_status check_object(const char *path, cJSON *obj, ppcc_json_duplicates dups, ppcc_diag *d) {
  int n = cJSON_GetArraySize(obj);
  if (cJSON_IsObject(obj) && n > 1) {
    cJSON **keys = malloc((size_t)n * sizeof *keys);
    if (!keys) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    int k = 0;
    for (cJSON *c = obj->child; c; c = c->next) keys[k++] = c;
    qsort(keys, (size_t)n, sizeof *keys, by_key);
    for (int i = 0; i + 1 < n; i++) {
      if (strcmp(keys[i]->string, keys[i + 1]->string) != 0) continue;
      char shown[200];
      ppcc_escape_text(shown, sizeof shown, keys[i]->string);
      if (dups == PPCC_JSON_DUPLICATES_REFUSED) {
        free(keys);
        return ppcc_error(d, "%s: key '%s' appears twice", path, shown);
      }
      /* Python's json keeps the last: drop the earlier one */
      cJSON *a = keys[i], *b = keys[i + 1];
      cJSON *earlier = position_in(obj, a) < position_in(obj, b) ? a : b;
      if (earlier == a) keys[i + 1] = b;
      else keys[i + 1] = a;
      ppcc_warning(d, "%s: key '%s' appears twice; the last one is used (as Python reads it)", path, shown);
      cJSON_Delete(cJSON_DetachItemViaPointer(obj, earlier));
    }
    free(keys);
  }
  for (cJSON *c = obj->child; c; c = c->next)
    if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
      ppcc_status st = check_object(path, c, dups, d);
      if (st) return st;
    }
  return PPCC_OK;
}

ppcc_status ppcc_json_parse_strict(const char *path, const char *text, size_t len, ppcc_json_duplicates dups,
                                   cJSON **out, ppcc_diag *d) {
  *out = NULL;
  ppcc_status st = refuse_escaped_nul(path, text, len, d);
  if (st) return st;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
  if (!root) {
    size_t at = end && end >= text ? (size_t)(end - text) : 0;
    return ppcc_error(d, "%s: not valid JSON (near byte %zu)", path, at);
  }
  st = check_object(path, root, dups, d);
  if (st) {
    cJSON_Delete(root);
    return st;
  }
  *out = root;
  return PPCC_OK;
}
