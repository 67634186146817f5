/* --pp, --tp, --device-memory and --devices-spec of `ppcc compile`,
 * `report`, `run` and `import onnx`: the auto-partition request put on the
 * graph before the passes run. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"

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

/* --tp T or --tp T0,T1,...: per-stage sizes, --tp is their largest. */
static ppcc_status set_tp(const cli_value *v) {
  cli_partition *req = v->args;
  if (strchr(v->text, ',')) {
    ppcc_status st = parse_stage_tp(v->command, req, v->text);
    req->tp = st ? 0 : req->stage_tp[0];
    for (int s = 0; !st && s < req->n_stage_tp; s++)
      if (req->stage_tp[s] > req->tp) req->tp = req->stage_tp[s];
    return st;
  }
  long long t = 0;
  ppcc_status st = cli_parse_int(v->command, v->name, v->text, 1, PPCC_MAX_DEVICES, &t);
  if (st != PPCC_OK) return st;
  req->tp = (int)t;
  req->n_stage_tp = 0;
  return PPCC_OK;
}

static ppcc_status set_device_memory(const cli_value *v) {
  int64_t bytes = 0;
  if (!ppcc_parse_byte_count(v->text, &bytes))
    return cli_usage_error(v->command, "option '--device-memory' needs a positive byte count (e.g. 1000000, "
                                       "512M, 16G), got '%s'", v->text);
  ((cli_partition *)v->args)->device_memory = bytes;
  return PPCC_OK;
}

static ppcc_status set_diagnostics(const cli_value *v) {
  if (strcmp(v->text, "json") != 0 && strcmp(v->text, "text") != 0)
    return cli_usage_error(v->command, "option '--diagnostics' needs 'text' or 'json', got '%s'", v->text);
  ((cli_partition *)v->args)->diagnostics_json = strcmp(v->text, "json") == 0;
  return PPCC_OK;
}

const cli_option cli_partition_options[] = {
  CLI_INT_ROW("pp", "P", cli_partition, pp, 1, PPCC_MAX_DEVICES,
              "auto-partition a model without placement into P\n"
              "pipeline stages (stage s on devices s*T..s*T+T-1)"),
  CLI_CALL_ROW("tp", "T", cli_partition, tp, set_tp,
               "... of T tensor-parallel devices each (Megatron pairs);\n"
               "--tp=T0,T1,... gives each stage its own TP size (e.g.\n"
               "4,1,2,1: stage 0 on devices 0-3, 1 on 4, 2 on 5-6, 3\n"
               "on 7); the number of sizes is the number of stages"),
  CLI_CALL_ROW("device-memory", "B", cli_partition, device_memory, set_device_memory,
               "bytes per device the split must fit in (suffixes\n"
               "K, M, G, T: powers of 1024); needs --pp or --tp"),
  CLI_TEXT_ROW("devices-spec", "FILE", cli_partition, devices_spec_path,
               "heterogeneous devices, a JSON file\n"
               "{\"devices\": [{\"memory\": \"8GiB\", \"speed\": 1.0}, ...]}:\n"
               "entry i is device i; a faster stage gets more work,\n"
               "each device's memory is its budget (replacing\n"
               "--device-memory for it); without --pp/--tp, a\n"
               "placed model's devices are checked against it;\n"
               "\"host\" per device and top-level \"links\"\n"
               "([{\"bandwidth\": \"100Mbit\", \"latency\": \"200us\"}])\n"
               "add transfer times between hosts to the prediction"),
  CLI_END_ROW,
};

const cli_option cli_diagnostics_options[] = {
  CLI_CALL_ROW("diagnostics", "FORMAT", cli_partition, diagnostics_json, set_diagnostics,
               "text (default): a placement error is followed by its\n"
               "--why chain and fixes as '  note:'/'  fix:' lines;\n"
               "json: the error as one JSON document on stderr (kind,\n"
               "op, operands, chain, fixes as edits with their cost)"),
  CLI_END_ROW,
};

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
