/* The rule for the names of values and models (model.json, DESIGN §3),
 * shared by the loader and the importers that write model.json: non-empty,
 * at most PPCC_MAX_NAME bytes, printable UTF-8 (names end up in reports,
 * diagnostics and MLIR) and without '@' (reserved for the names of values
 * a pass inserts, such as "h1@2,3"). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ppcc/frontend.h"

static bool refuse(char *why, size_t n, const char *fmt, ...) {
  if (why && n > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
  }
  return false;
}

bool ppcc_name_check(const char *s, bool allow_at, char *why, size_t why_len) {
  size_t n = strlen(s);
  if (n == 0) return refuse(why, why_len, "name is empty");
  if (n > PPCC_MAX_NAME)
    return refuse(why, why_len, "name '%.32s...' is %zu bytes long, more than the maximum %d", s, n, PPCC_MAX_NAME);
  for (size_t i = 0; i < n;) {
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return refuse(why, why_len, "name contains a control character (U+%04X at byte %zu)", (unsigned char)s[i], i);
    if (s[i] == '@' && !allow_at)
      return refuse(why, why_len, "name '%s' contains '@' (reserved for inserted values)", s);
    unsigned c;
    size_t len = (size_t)ppcc_utf8_char(s + i, &c);
    if (len == 0) return refuse(why, why_len, "name is not valid UTF-8 (byte %zu)", i);
    if (c >= 0x80 && c <= 0x9F)
      return refuse(why, why_len, "name contains a control character (U+%04X at byte %zu)", (unsigned)c, i);
    if (ppcc_hidden_code_point(c))
      return refuse(why, why_len, "name contains the invisible direction or line character U+%04X (byte %zu)",
                    (unsigned)c, i);
    i += len;
  }
  return true;
}
