/* --devices-spec FILE.json (include/ppcc/devices_spec.h): parsed and
 * validated here, one diagnostic naming the file and the entry/field. */
#include "ppcc/devices_spec.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/graph.h"
#include "ppcc/io.h"
#include "ppcc/json_strict.h"

bool ppcc_parse_byte_count(const char *text, int64_t *out) {
  static const char units[] = "KMGT";
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || v < 1) return false;
  if (*end) {
    const char *u = strchr(units, *end);
    if (!u || (end[1] && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0)) return false;
    for (int i = 0; i <= (int)(u - units); i++) { /* K = 1024^1 ... T = 1024^4 */
      if (v > INT64_MAX / 1024) return false;
      v *= 1024;
    }
  }
  *out = v;
  return true;
}

double ppcc_devices_spec_speed(const ppcc_devices_spec *s, int dev) {
  return s && dev >= 0 && dev < s->n_devices && s->speed[dev] > 0 ? s->speed[dev] : 1.0;
}

void ppcc_devices_spec_free(ppcc_devices_spec *s) {
  free((char *)s->path);
  free(s->memory);
  free(s->speed);
  memset(s, 0, sizeof *s);
}

/* d names the spec file (the driver makes it for the file), so the
 * message names the entry and field only. */
static ppcc_status spec_error(ppcc_diag *d, const char *path, const char *what) {
  (void)path;
  return ppcc_error(d, "devices spec: %s", what);
}

static ppcc_status entry_memory(const cJSON *m, const char *path, int i, int64_t *out, ppcc_diag *d) {
  char msg[256];
  if (cJSON_IsString(m) && ppcc_parse_byte_count(m->valuestring, out)) return PPCC_OK;
  if (cJSON_IsNumber(m) && m->valuedouble >= 1 && m->valuedouble < 9.2e18 && m->valuedouble == floor(m->valuedouble)) {
    *out = (int64_t)m->valuedouble;
    return PPCC_OK;
  }
  snprintf(msg, sizeof msg,
           "devices[%d].memory must be a positive byte count (a whole number, or a string such as \"8GiB\", "
           "\"512M\")",
           i);
  return spec_error(d, path, msg);
}

static ppcc_status entry_speed(const cJSON *s, const char *path, int i, double *out, ppcc_diag *d) {
  /* bounded both ways: a speed of 5e-324 made every predicted time inf/nan */
  if (cJSON_IsNumber(s) && isfinite(s->valuedouble) && s->valuedouble >= 1e-6 && s->valuedouble <= 1e6) {
    *out = s->valuedouble;
    return PPCC_OK;
  }
  char msg[160];
  snprintf(msg, sizeof msg, "devices[%d].speed must be a number in [1e-6, 1e6] (relative speed, 1.0 = baseline)", i);
  return spec_error(d, path, msg);
}

static ppcc_status parse_entry(const cJSON *e, const char *path, int i, ppcc_devices_spec *out, ppcc_diag *d) {
  char msg[200];
  if (!cJSON_IsObject(e)) {
    snprintf(msg, sizeof msg, "devices[%d] must be an object like {\"memory\": \"8GiB\", \"speed\": 1.0}", i);
    return spec_error(d, path, msg);
  }
  out->speed[i] = 1.0;
  for (const cJSON *f = e->child; f; f = f->next) {
    ppcc_status st;
    if (f->string && strcmp(f->string, "memory") == 0) st = entry_memory(f, path, i, &out->memory[i], d);
    else if (f->string && strcmp(f->string, "speed") == 0) st = entry_speed(f, path, i, &out->speed[i], d);
    else {
      snprintf(msg, sizeof msg, "devices[%d] has unknown field '%.60s' (allowed: memory, speed)", i,
               f->string ? f->string : "");
      st = spec_error(d, path, msg);
    }
    if (st) return st;
  }
  return PPCC_OK;
}

static ppcc_status parse_root(const cJSON *root, const char *path, ppcc_devices_spec *out, ppcc_diag *d) {
  char msg[200];
  if (!cJSON_IsObject(root)) return spec_error(d, path, "a devices spec must be a JSON object {\"devices\": [...]}");
  const cJSON *devs = NULL;
  for (const cJSON *f = root->child; f; f = f->next) {
    if (f->string && strcmp(f->string, "devices") == 0) {
      devs = f;
      continue;
    }
    snprintf(msg, sizeof msg, "unknown top-level field '%.60s' (allowed: devices)", f->string ? f->string : "");
    return spec_error(d, path, msg);
  }
  if (!devs) return spec_error(d, path, "missing \"devices\" (an array of {\"memory\", \"speed\"} objects)");
  int n = cJSON_IsArray(devs) ? cJSON_GetArraySize(devs) : -1;
  if (n < 1 || n > PPCC_MAX_DEVICES) {
    snprintf(msg, sizeof msg, "\"devices\" must be an array of 1 to %d device objects", PPCC_MAX_DEVICES);
    return spec_error(d, path, msg);
  }
  out->n_devices = n;
  out->memory = calloc((size_t)n, sizeof(int64_t));
  out->speed = calloc((size_t)n, sizeof(double));
  if (!out->memory || !out->speed) return ppcc_error(d, "out of memory reading devices spec '%s'", path);
  int i = 0;
  for (const cJSON *e = devs->child; e; e = e->next, i++) {
    ppcc_status st = parse_entry(e, path, i, out, d);
    if (st) return st;
  }
  return PPCC_OK;
}

ppcc_status ppcc_devices_spec_parse(const char *path, const char *text, size_t len, ppcc_devices_spec *out,
                                    ppcc_diag *d) {
  memset(out, 0, sizeof *out);
  cJSON *root = NULL;
  ppcc_status st = ppcc_json_parse_strict("devices spec", text, len, PPCC_JSON_DUPLICATES_REFUSED, &root, d);
  if (st) return st;
  st = parse_root(root, path, out, d);
  cJSON_Delete(root);
  if (st == PPCC_OK && !(out->path = strdup(path))) st = ppcc_error(d, "out of memory reading devices spec '%s'", path);
  if (st) ppcc_devices_spec_free(out);
  return st;
}

ppcc_status ppcc_devices_spec_load(const char *path, ppcc_devices_spec *out, ppcc_diag *d) {
  memset(out, 0, sizeof *out);
  size_t len = 0;
  char *text = ppcc_read_file(path, &len, d);
  if (!text) return PPCC_ERR_USER;
  ppcc_status st = ppcc_devices_spec_parse(path, text, len, out, d);
  free(text);
  return st;
}
