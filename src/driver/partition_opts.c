/* --pp, --tp and --device-memory of `ppcc compile` and `ppcc report`: the
 * auto-partition request put on the graph before the passes run. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"

const char cli_partition_help[] =
    "  --pp=P              auto-partition a model without placement into P\n"
    "                      pipeline stages (stage s on devices s*T..s*T+T-1)\n"
    "  --tp=T              ... of T tensor-parallel devices each (Megatron pairs)\n"
    "  --device-memory=B   bytes per device the split must fit in (suffixes\n"
    "                      K, M, G, T: powers of 1024); needs --pp or --tp\n";

/* "16G", "512M", "1000": bytes, positive, no overflow. */
static bool parse_bytes(const char *text, long long *out) {
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

ppcc_status cli_partition_option(const char *command, cli_partition *req, const char *name,
                                 const char *value, bool *handled) {
  long long v = 0;
  *handled = true;
  if (strcmp(name, "pp") == 0 || strcmp(name, "tp") == 0) {
    ppcc_status st = cli_parse_int(command, name, value, 1, PPCC_MAX_DEVICES, &v);
    if (st != PPCC_OK) return st;
    if (name[0] == 'p') req->pp = (int)v;
    else req->tp = (int)v;
    return PPCC_OK;
  }
  if (strcmp(name, "device-memory") == 0) {
    if (!parse_bytes(value, &v))
      return cli_usage_error(command, "option '--device-memory' needs a positive byte count (e.g. 1000000, "
                                      "512M, 16G), got '%s'", value);
    req->device_memory = v;
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

ppcc_status cli_check_partition(const char *command, const cli_partition *req) {
  if (req->device_memory > 0 && req->pp == 0 && req->tp == 0)
    return cli_usage_error(command, "--device-memory needs --pp or --tp (it limits the automatic split)");
  return PPCC_OK;
}

void cli_apply_partition(ppcc_graph *g, const cli_partition *req) {
  if (!req) return;
  g->partition.pp = req->pp;
  g->partition.tp = req->tp;
  g->partition.device_memory = req->device_memory;
}
