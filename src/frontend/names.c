/* The rule for the names of values and models (model.json, DESIGN §3),
 * shared by the loader and the importers that write model.json: non-empty,
 * at most PPCC_MAX_NAME bytes, printable UTF-8 (names end up in reports,
 * diagnostics and MLIR) and without '@' (reserved for the names of values
 * a pass inserts, such as "h1@2,3"). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ppcc/frontend.h"

/* Length of the UTF-8 sequence starting at s, or 0 if it is invalid
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static size_t utf8_sequence_length(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  size_t n = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
  if (n == 0 || s[0] > 0xF4) return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0) || (s[0] == 0xF0 && s[1] < 0x90) ||
      (s[0] == 0xF4 && s[1] >= 0x90))
    return 0;
  return n;
}

/* The code point of a valid UTF-8 sequence of length n. */
static uint32_t utf8_code_point(const unsigned char *s, size_t n) {
  if (n == 1) return s[0];
  uint32_t c = s[0] & (0x7F >> n);
  for (size_t i = 1; i < n; i++) c = c << 6 | (s[i] & 0x3F);
  return c;
}

/* C1 controls, and the invisible characters that reorder or break the
 * text around them (bidi controls, line separators): in a name they make
 * a diagnostic or a report show something other than what is there. */
static bool misleading_code_point(uint32_t c) {
  return (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x2028 && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069) || c == 0xFEFF;
}

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
    size_t len = utf8_sequence_length((const unsigned char *)s + i);
    if (len == 0) return refuse(why, why_len, "name is not valid UTF-8 (byte %zu)", i);
    uint32_t c = utf8_code_point((const unsigned char *)s + i, len);
    if (c >= 0x80 && c <= 0x9F)
      return refuse(why, why_len, "name contains a control character (U+%04X at byte %zu)", (unsigned)c, i);
    if (misleading_code_point(c))
      return refuse(why, why_len, "name contains the invisible direction or line character U+%04X (byte %zu)",
                    (unsigned)c, i);
    i += len;
  }
  return true;
}
