/* --pp, --tp, --device-memory and --devices-spec of `ppcc compile`,
 * `report`, `run` and `import onnx`: the auto-partition request put on the
 * graph before the passes run. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"

const char cli_partition_help[] =
    "  --pp=P              auto-partition a model without placement into P\n"
    "                      pipeline stages (stage s on devices s*T..s*T+T-1)\n"
    "  --tp=T              ... of T tensor-parallel devices each (Megatron pairs);\n"
    "                      --tp=T0,T1,... gives each stage its own TP size (e.g.\n"
    "                      4,1,2,1: stage 0 on devices 0-3, 1 on 4, 2 on 5-6, 3\n"
    "                      on 7); the number of sizes is the number of stages\n"
    "  --device-memory=B   bytes per device the split must fit in (suffixes\n"
    "                      K, M, G, T: powers of 1024); needs --pp or --tp\n"
    "  --devices-spec=FILE heterogeneous devices, a JSON file\n"
    "                      {\"devices\": [{\"memory\": \"8GiB\", \"speed\": 1.0}, ...]}:\n"
    "                      entry i is device i; a faster stage gets more work,\n"
    "                      each device's memory is its budget (replacing\n"
    "                      --device-memory for it); without --pp/--tp, a\n"
    "                      placed model's devices are checked against it\n";

/* "4,1,2,1": per-stage TP sizes. */
static ppcc_status parse_stage_tp(const char *command, cli_partition *req, const char *value) {
  req->n_stage_tp = 0;
  const char *p = value;
  for (;;) {
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno || end == p || v < 1 || v > PPCC_MAX_DEVICES || req->n_stage_tp >= PPCC_MAX_DEVICES ||
        (*end && *end != ','))
      return cli_usage_error(command, "option '--tp' needs T or per-stage sizes T0,T1,... (each 1..%d), got '%s'",
                             PPCC_MAX_DEVICES, value);
    req->stage_tp[req->n_stage_tp++] = (int)v;
    if (!*end) break;
    p = end + 1;
  }
  return PPCC_OK;
}

ppcc_status cli_partition_option(const char *command, cli_partition *req, const char *name,
                                 const char *value, bool *handled) {
  long long v = 0;
  *handled = true;
  if (strcmp(name, "tp") == 0 && strchr(value, ',')) {
    ppcc_status st = parse_stage_tp(command, req, value);
    req->tp = st ? 0 : req->stage_tp[0];
    for (int s = 0; !st && s < req->n_stage_tp; s++)
      if (req->stage_tp[s] > req->tp) req->tp = req->stage_tp[s];
    return st;
  }
  if (strcmp(name, "pp") == 0 || strcmp(name, "tp") == 0) {
    ppcc_status st = cli_parse_int(command, name, value, 1, PPCC_MAX_DEVICES, &v);
    if (st != PPCC_OK) return st;
    if (name[0] == 'p') req->pp = (int)v;
    else req->tp = (int)v, req->n_stage_tp = 0;
    return PPCC_OK;
  }
  if (strcmp(name, "device-memory") == 0) {
    int64_t bytes = 0;
    if (!ppcc_parse_byte_count(value, &bytes))
      return cli_usage_error(command, "option '--device-memory' needs a positive byte count (e.g. 1000000, "
                                      "512M, 16G), got '%s'", value);
    req->device_memory = bytes;
    return PPCC_OK;
  }
  if (strcmp(name, "devices-spec") == 0) {
    req->devices_spec_path = value;
    return PPCC_OK;
  }
  if (strcmp(name, "diagnostics") == 0) {
    if (strcmp(value, "json") != 0 && strcmp(value, "text") != 0)
      return cli_usage_error(command, "option '--diagnostics' needs 'text' or 'json', got '%s'", value);
    req->diagnostics_json = strcmp(value, "json") == 0;
    return PPCC_OK;
  }
  *handled = false;
  return PPCC_OK;
}

/* The spec's arrays are copied into the request, so nothing is left to
 * free whatever path the command takes afterwards. */
static ppcc_status load_spec(cli_partition *req) {
  ppcc_diag d;
  ppcc_diag_init(&d, req->devices_spec_path, stderr);
  ppcc_devices_spec spec;
  ppcc_status st = ppcc_devices_spec_load(req->devices_spec_path, &spec, &d);
  if (st) return st;
  memcpy(req->spec_memory, spec.memory, sizeof(int64_t) * (size_t)spec.n_devices);
  memcpy(req->spec_speed, spec.speed, sizeof(double) * (size_t)spec.n_devices);
  memcpy(req->spec_host, spec.host, sizeof(int) * (size_t)spec.n_devices);
  if (spec.n_links) memcpy(req->spec_links, spec.links, sizeof(ppcc_link_spec) * (size_t)spec.n_links);
  req->devices_spec = (ppcc_devices_spec){.path = req->devices_spec_path, .n_devices = spec.n_devices,
                                          .memory = req->spec_memory, .speed = req->spec_speed,
                                          .host = req->spec_host, .n_links = spec.n_links,
                                          .links = req->spec_links};
  ppcc_devices_spec_free(&spec);
  return PPCC_OK;
}

ppcc_status cli_check_partition(const char *command, cli_partition *req) {
  if (req->device_memory > 0 && req->pp == 0 && req->tp == 0)
    return cli_usage_error(command, "--device-memory needs --pp or --tp (it limits the automatic split)");
  if (req->devices_spec_path && req->pp == 0 && req->tp == 0 && strcmp(command, "import") == 0)
    return cli_usage_error(command, "--devices-spec needs --pp or --tp (it shapes the automatic split)");
  if (req->n_stage_tp > 0 && req->pp > 0 && req->pp != req->n_stage_tp)
    return cli_usage_error(command, "--tp gives %d stage TP sizes but --pp is %d (give one size per stage, or "
                                    "leave --pp out)", req->n_stage_tp, req->pp);
  if (req->n_stage_tp > 0) req->pp = req->n_stage_tp;
  if (req->devices_spec_path && !req->devices_spec.n_devices) return load_spec(req);
  return PPCC_OK;
}

int cli_partition_devices(const cli_partition *req) {
  int pp = req->pp > 0 ? req->pp : 1, tp = req->tp > 0 ? req->tp : 1;
  if (req->n_stage_tp == 0) return pp * tp;
  int n = 0;
  for (int s = 0; s < req->n_stage_tp; s++) n += req->stage_tp[s];
  return n;
}

void cli_apply_partition(ppcc_graph *g, const cli_partition *req) {
  if (!req) return;
  g->partition.pp = req->pp;
  g->partition.tp = req->tp;
  g->partition.device_memory = req->device_memory;
  bool mixed = false;
  for (int s = 1; s < req->n_stage_tp; s++) mixed = mixed || req->stage_tp[s] != req->stage_tp[0];
  g->partition.stage_tp = mixed ? req->stage_tp : NULL;
  g->partition.devices_spec = req->devices_spec.n_devices ? &req->devices_spec : NULL;
}
