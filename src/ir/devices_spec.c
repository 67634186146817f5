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

int ppcc_devices_spec_host(const ppcc_devices_spec *s, const int *host_of, int dev) {
  if (host_of) return host_of[dev];
  if (s && s->host && dev >= 0 && dev < s->n_devices && s->host[dev] >= 0) return s->host[dev];
  return PPCC_MAX_DEVICES + dev; /* a host of its own, apart from every numbered one */
}

const ppcc_link_spec *ppcc_devices_spec_link(const ppcc_devices_spec *s, int host_a, int host_b) {
  const ppcc_link_spec *any = NULL;
  for (int i = 0; s && host_a != host_b && i < s->n_links; i++) {
    const ppcc_link_spec *l = &s->links[i];
    if ((l->a == host_a && l->b == host_b) || (l->a == host_b && l->b == host_a)) return l;
    if (l->a < 0 && !any) any = l;
  }
  return any;
}

double ppcc_devices_spec_link_ms(const ppcc_devices_spec *s, const int *host_of, int a, int b, int64_t bytes) {
  if (!s || !s->n_links || a == b) return 0;
  const ppcc_link_spec *l =
      ppcc_devices_spec_link(s, ppcc_devices_spec_host(s, host_of, a), ppcc_devices_spec_host(s, host_of, b));
  return l ? 1e3 * (l->latency_s + (double)bytes / l->bytes_per_s) : 0;
}

void ppcc_devices_spec_free(ppcc_devices_spec *s) {
  free((char *)s->path);
  free(s->memory);
  free(s->speed);
  free(s->host);
  free(s->links);
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

static ppcc_status entry_host(const cJSON *h, const char *path, int i, int *out, ppcc_diag *d) {
  if (cJSON_IsNumber(h) && h->valuedouble >= 0 && h->valuedouble < PPCC_MAX_DEVICES &&
      h->valuedouble == floor(h->valuedouble)) {
    *out = (int)h->valuedouble;
    return PPCC_OK;
  }
  char msg[160];
  snprintf(msg, sizeof msg, "devices[%d].host must be a whole number in [0, %d] (the host the device is on)", i,
           PPCC_MAX_DEVICES - 1);
  return spec_error(d, path, msg);
}

/* "100Mbit", "1.5Gbit", "12MB/s", "800KB/s" or a number of bytes per second. */
static bool parse_bandwidth(const cJSON *v, double *out) {
  if (cJSON_IsNumber(v)) *out = v->valuedouble;
  else if (cJSON_IsString(v)) {
    char *end = NULL;
    errno = 0;
    double x = strtod(v->valuestring, &end);
    if (errno || end == v->valuestring) return false;
    double scale = 1;
    if (*end == 'K') scale = 1e3, end++;
    else if (*end == 'M') scale = 1e6, end++;
    else if (*end == 'G') scale = 1e9, end++;
    if (strcmp(end, "bit") == 0) scale /= 8;
    else if (strcmp(end, "B/s") != 0) return false;
    *out = x * scale;
  } else
    return false;
  return isfinite(*out) && *out >= 1 && *out <= 1e15;
}

/* "200us", "1.5ms", "0.01s" or a number of seconds. */
static bool parse_latency(const cJSON *v, double *out) {
  if (cJSON_IsNumber(v)) *out = v->valuedouble;
  else if (cJSON_IsString(v)) {
    char *end = NULL;
    errno = 0;
    double x = strtod(v->valuestring, &end);
    if (errno || end == v->valuestring) return false;
    if (strcmp(end, "us") == 0) *out = x * 1e-6;
    else if (strcmp(end, "ms") == 0) *out = x * 1e-3;
    else if (strcmp(end, "s") == 0) *out = x;
    else return false;
  } else
    return false;
  return isfinite(*out) && *out >= 0 && *out <= 3600;
}

static ppcc_status parse_link(const cJSON *e, const char *path, int i, ppcc_link_spec *out, ppcc_diag *d) {
  char msg[240];
  if (!cJSON_IsObject(e)) {
    snprintf(msg, sizeof msg, "links[%d] must be an object like {\"hosts\": [0, 1], \"bandwidth\": \"1Gbit\", "
                              "\"latency\": \"50us\"}", i);
    return spec_error(d, path, msg);
  }
  *out = (ppcc_link_spec){.a = -1, .b = -1};
  bool have_bw = false;
  for (const cJSON *f = e->child; f; f = f->next) {
    const char *key = f->string ? f->string : "";
    if (strcmp(key, "hosts") == 0) {
      const cJSON *a = cJSON_GetArrayItem(f, 0), *b = cJSON_GetArrayItem(f, 1);
      bool whole = cJSON_IsArray(f) && cJSON_GetArraySize(f) == 2 && cJSON_IsNumber(a) && cJSON_IsNumber(b) &&
                   a->valuedouble >= 0 && b->valuedouble >= 0 && a->valuedouble < PPCC_MAX_DEVICES &&
                   b->valuedouble < PPCC_MAX_DEVICES && a->valuedouble == floor(a->valuedouble) &&
                   b->valuedouble == floor(b->valuedouble) && a->valuedouble != b->valuedouble;
      if (!whole) {
        snprintf(msg, sizeof msg, "links[%d].hosts must be two different host numbers [A, B] in [0, %d]", i,
                 PPCC_MAX_DEVICES - 1);
        return spec_error(d, path, msg);
      }
      out->a = (int)a->valuedouble, out->b = (int)b->valuedouble;
    } else if (strcmp(key, "bandwidth") == 0) {
      if (!parse_bandwidth(f, &out->bytes_per_s)) {
        snprintf(msg, sizeof msg, "links[%d].bandwidth must be bytes per second (a number >= 1) or a string such "
                                  "as \"100Mbit\", \"1Gbit\", \"500MB/s\"", i);
        return spec_error(d, path, msg);
      }
      have_bw = true;
    } else if (strcmp(key, "latency") == 0) {
      if (!parse_latency(f, &out->latency_s)) {
        snprintf(msg, sizeof msg, "links[%d].latency must be seconds (a number in [0, 3600]) or a string such as "
                                  "\"200us\", \"1.5ms\"", i);
        return spec_error(d, path, msg);
      }
    } else {
      snprintf(msg, sizeof msg, "links[%d] has unknown field '%.60s' (allowed: hosts, bandwidth, latency)", i, key);
      return spec_error(d, path, msg);
    }
  }
  if (!have_bw) {
    snprintf(msg, sizeof msg, "links[%d] has no \"bandwidth\" (e.g. \"100Mbit\")", i);
    return spec_error(d, path, msg);
  }
  return PPCC_OK;
}

static ppcc_status parse_links(const cJSON *links, const char *path, ppcc_devices_spec *out, ppcc_diag *d) {
  char msg[200];
  int n = cJSON_IsArray(links) ? cJSON_GetArraySize(links) : -1;
  if (n < 1 || n > PPCC_MAX_LINKS) {
    snprintf(msg, sizeof msg, "\"links\" must be an array of 1 to %d link objects", PPCC_MAX_LINKS);
    return spec_error(d, path, msg);
  }
  if (!(out->links = calloc((size_t)n, sizeof *out->links)))
    return ppcc_error(d, "out of memory reading devices spec '%s'", path);
  int i = 0;
  for (const cJSON *e = links->child; e; e = e->next, i++) {
    ppcc_status st = parse_link(e, path, i, &out->links[i], d);
    if (st) return st;
    for (int j = 0; j < i; j++)
      if (out->links[j].a == out->links[i].a && out->links[j].b == out->links[i].b) {
        if (out->links[i].a < 0)
          snprintf(msg, sizeof msg, "links[%d] and links[%d] both give the link between any two hosts", j, i);
        else
          snprintf(msg, sizeof msg, "links[%d] and links[%d] both give the link between hosts %d and %d", j, i,
                   out->links[i].a, out->links[i].b);
        return spec_error(d, path, msg);
      } else if (out->links[i].a >= 0 && out->links[j].a == out->links[i].b && out->links[j].b == out->links[i].a) {
        snprintf(msg, sizeof msg, "links[%d] and links[%d] both give the link between hosts %d and %d", j, i,
                 out->links[i].a, out->links[i].b);
        return spec_error(d, path, msg);
      }
    out->n_links = i + 1;
  }
  return PPCC_OK;
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
    else if (f->string && strcmp(f->string, "host") == 0) st = entry_host(f, path, i, &out->host[i], d);
    else {
      snprintf(msg, sizeof msg, "devices[%d] has unknown field '%.60s' (allowed: memory, speed, host)", i,
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
  const cJSON *devs = NULL, *links = NULL;
  for (const cJSON *f = root->child; f; f = f->next) {
    if (f->string && strcmp(f->string, "devices") == 0) {
      devs = f;
      continue;
    }
    if (f->string && strcmp(f->string, "links") == 0) {
      links = f;
      continue;
    }
    snprintf(msg, sizeof msg, "unknown top-level field '%.60s' (allowed: devices, links)", f->string ? f->string : "");
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
  out->host = malloc(sizeof(int) * (size_t)n);
  if (!out->memory || !out->speed || !out->host) return ppcc_error(d, "out of memory reading devices spec '%s'", path);
  for (int i = 0; i < n; i++) out->host[i] = -1;
  int i = 0;
  for (const cJSON *e = devs->child; e; e = e->next, i++) {
    ppcc_status st = parse_entry(e, path, i, out, d);
    if (st) return st;
  }
  return links ? parse_links(links, path, out, d) : PPCC_OK;
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
