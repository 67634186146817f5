/* Predicted per-device peak memory, per-stage time and pipeline bubble of
 * a placed graph, the calibration file, and the comparison with a run
 * (include/ppcc/predict.h defines the models). The memory simulation
 * mirrors src/runtime/exec/executor.c step for step, so that the prediction
 * equals the runtime's accounting (tests/plan_check.sh holds them to it). */
#include <cjson/cJSON.h>
#include "ppcc/json_strict.h"
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/io.h"
#include "ppcc/ops.h"
#include "ppcc/predict.h"
#include "ppcc/devices_spec.h"
#include "ppcc/report.h"
#include "plan.h"

/* ---------------- calibration ---------------- */

void ppcc_calibration_defaults(ppcc_calibration *c) {
  memset(c, 0, sizeof *c);
  c->version = PPCC_CALIBRATION_VERSION;
  c->n_threads = 1;
  c->gemm_gflops[0] = 20;
  c->elementwise_gbps[0] = 5;
  c->elementwise_gflops[0] = 1;
  c->copy_gbps[0] = 8;
  c->op_overhead_us = 2;
  c->gemm_call_us = 2;
  c->cores = 1;
}

static ppcc_status bad_field(const char *path, const char *field, const char *why, ppcc_diag *d) {
  return ppcc_error(d, "%s: calibration field '%s' %s", path, field, why);
}

/* A time or cost figure of the file: a finite number in [0, 1e6]. */
static bool cost_number(const cJSON *x) {
  return cJSON_IsNumber(x) && isfinite(x->valuedouble) && x->valuedouble >= 0 && x->valuedouble <= 1e6;
}

/* The kinds of the file's fields that the table below reads and writes:
 * a string, an integer, a number, and a list of rates (one per thread
 * count, every list as long as the first). */
typedef enum { CAL_TEXT, CAL_INTEGER, CAL_NUMBER, CAL_RATES } calib_kind;

/* One field of the calibration file as the reader checks it and the
 * writer writes it, so that the two cannot disagree on its key, format or
 * range. Optional fields are absent from the file where the calibration
 * holds its default (0, "", no entries). */
typedef struct calib_field {
  const char *key;      /* the member's name */
  size_t at;            /* offsetof the member in ppcc_calibration */
  calib_kind kind;
  int since;            /* the first format that has it; earlier files are refused with it */
  bool required;
  double min, max;      /* INTEGER, NUMBER: its range */
  int residual_from;    /* NUMBER: from this format on a residual of the time model (the
                           measured less the modelled), so in [-max, max]; 0: never */
  bool exact;           /* NUMBER: written with every digit (a byte count), else as %.6g */
  size_t size;          /* TEXT: the member's size, the terminating NUL included */
  size_t count_at;      /* RATES: offsetof the member counting its entries */
} calib_field;

/* Member m of ppcc_calibration, keyed by its name; the _Generic refuses
 * at compile time a member whose type is not the kind's. */
#define CAL_AT(m, type) .key = #m, .at = offsetof(ppcc_calibration, m) + 0 * sizeof _Generic(((ppcc_calibration *)0)->m, type: 1)
#define CAL_TEXT_AT(m, since_) CAL_AT(m, char *), .kind = CAL_TEXT, .since = since_, .size = sizeof((ppcc_calibration *)0)->m
#define CAL_RATES_AT(m, count, since_) CAL_AT(m, double *), .kind = CAL_RATES, .since = since_, .count_at = offsetof(ppcc_calibration, count)
#define CAL_NUMBER_AT(m, since_) CAL_AT(m, double), .kind = CAL_NUMBER, .since = since_
#define CAL_COST_MAX 1e6 /* a time or cost figure: in [0, 1e6] */

/* In the order the writer writes them (and the reader checks them). */
static const calib_field calib_fields[] = {
    {CAL_TEXT_AT(cpu, 1)},
    {CAL_TEXT_AT(ppcc_version, 1)},
    {CAL_AT(cores, int), .kind = CAL_INTEGER, .since = 1, .required = true, .min = 1, .max = 1 << 20},
    {CAL_RATES_AT(gemm_gflops, n_threads, 1), .required = true},
    {CAL_RATES_AT(elementwise_gbps, n_threads, 1), .required = true},
    {CAL_RATES_AT(elementwise_gflops, n_threads, 1), .required = true},
    {CAL_RATES_AT(copy_gbps, n_threads, 1), .required = true},
    {CAL_NUMBER_AT(op_overhead_us, 1), .required = true, .max = CAL_COST_MAX},
    {CAL_NUMBER_AT(gemm_call_us, 1), .required = true, .max = CAL_COST_MAX},
    {CAL_NUMBER_AT(hop_us, 1), .max = CAL_COST_MAX},
    {CAL_NUMBER_AT(resume_us, 1), .max = CAL_COST_MAX, .residual_from = 4},
    {CAL_NUMBER_AT(start_us, 1), .max = CAL_COST_MAX},
    {CAL_NUMBER_AT(jit_start_us, 1), .max = CAL_COST_MAX},
    {CAL_NUMBER_AT(resume_spread_us, 4), .max = CAL_COST_MAX, .residual_from = 4},
    {CAL_NUMBER_AT(start_spread_us, 4), .max = CAL_COST_MAX, .residual_from = 7},
    {CAL_NUMBER_AT(jit_resume_us, 4), .max = CAL_COST_MAX, .residual_from = 4},
    {CAL_NUMBER_AT(jit_resume_spread_us, 4), .max = CAL_COST_MAX, .residual_from = 4},
    {CAL_NUMBER_AT(jit_start_spread_us, 4), .max = CAL_COST_MAX},
    {CAL_NUMBER_AT(start_own_core_us, 5), .max = CAL_COST_MAX, .residual_from = 7},
    {CAL_NUMBER_AT(jit_start_own_core_us, 5), .max = CAL_COST_MAX},
    {CAL_NUMBER_AT(resume_wide_us, 6), .max = CAL_COST_MAX, .residual_from = 6},
    {CAL_NUMBER_AT(start_wide_us, 6), .max = CAL_COST_MAX, .residual_from = 7},
    {CAL_NUMBER_AT(jit_resume_wide_us, 6), .max = CAL_COST_MAX, .residual_from = 6},
    {CAL_NUMBER_AT(jit_start_wide_us, 6), .max = CAL_COST_MAX},
    {CAL_NUMBER_AT(pool_wake_us, 4), .max = CAL_COST_MAX},
    {CAL_NUMBER_AT(cache_bytes, 3), .max = 1e12, .exact = true},
    {CAL_RATES_AT(concurrent_slowdown, n_slowdown, 1)},
    {CAL_RATES_AT(jit_concurrent_slowdown, n_jit_slowdown, 3)},
    {CAL_NUMBER_AT(jit_threads_factor, 3), .max = 100},
};

/* The least value of a numeric field in a file of format `version`. */
static double field_min(const calib_field *f, int version) {
  return f->residual_from && version >= f->residual_from ? -f->max : f->min;
}

/* A bound as the diagnostics write it: 100, 1048576, 1e6, -1e12. */
static const char *bound_text(double v, char *buf, size_t size) {
  double e = fabs(v) >= 1e6 ? round(log10(fabs(v))) : 0;
  if (e > 0 && pow(10, e) == fabs(v)) snprintf(buf, size, "%s1e%.0f", v < 0 ? "-" : "", e);
  else snprintf(buf, size, "%.15g", v);
  return buf;
}

static ppcc_status read_rates(const cJSON *root, const char *path, const char *field, double *out, int *n,
                              ppcc_diag *d) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, field);
  if (!cJSON_IsArray(a)) return bad_field(path, field, "is missing or not an array of numbers", d);
  int count = cJSON_GetArraySize(a);
  if (count < 1 || count > PPCC_CALIB_MAX_THREADS)
    return bad_field(path, field, "needs 1 to 64 entries (one per thread count)", d);
  if (*n && count != *n) return bad_field(path, field, "has another length than gemm_gflops", d);
  int i = 0;
  for (const cJSON *e = a->child; e; e = e->next, i++) {
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble <= 0)
      return bad_field(path, field, "has an entry that is not a positive number", d);
    out[i] = e->valuedouble;
  }
  *n = count;
  return PPCC_OK;
}

/* Field f of the table from the file (format c->version) into c; *n the
 * entries of the rates read so far (0: none yet). */
static ppcc_status read_field(const cJSON *root, const char *path, const calib_field *f, ppcc_calibration *c, int *n,
                              ppcc_diag *d) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, f->key);
  char *at = (char *)c + f->at, why[96], lo[24], hi[24];
  if (x && c->version < f->since) {
    snprintf(why, sizeof why, "is not in formats before %d", f->since);
    return bad_field(path, f->key, why, d);
  }
  if (!x && !f->required) return PPCC_OK; /* its default (ppcc_calibration_defaults) */
  switch (f->kind) {
  case CAL_TEXT:
    if (!cJSON_IsString(x) || strlen(x->valuestring) >= f->size) {
      snprintf(why, sizeof why, "is not a string of at most %zu bytes", f->size - 1);
      return bad_field(path, f->key, why, d);
    }
    for (const char *p = x->valuestring; *p;) { /* JSON text is UTF-8: a stray byte would not round-trip */
      unsigned cp;
      int len = ppcc_utf8_char(p, &cp);
      if (len == 0) return bad_field(path, f->key, "is not valid UTF-8", d);
      p += len;
    }
    memcpy(at, x->valuestring, strlen(x->valuestring) + 1);
    return PPCC_OK;
  case CAL_RATES: {
    ppcc_status st = read_rates(root, path, f->key, (double *)at, n, d);
    if (!st) *(int *)((char *)c + f->count_at) = *n;
    return st;
  }
  case CAL_INTEGER:
  case CAL_NUMBER: {
    bool integer = f->kind == CAL_INTEGER;
    double min = field_min(f, c->version), v = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    if (!isfinite(v) || v < min || v > f->max || (integer && v != floor(v))) {
      snprintf(why, sizeof why, "is %snot %s in [%s, %s]", f->required ? "missing or " : "",
               integer ? "an integer" : "a number", bound_text(min, lo, sizeof lo), bound_text(f->max, hi, sizeof hi));
      return bad_field(path, f->key, why, d);
    }
    if (integer) *(int *)at = (int)v;
    else *(double *)at = v;
    return PPCC_OK;
  }
  }
  return PPCC_OK;
}

/* The kernel suffixes of a cost key (ppcc_op_cost_key), "" the op's own. */
static const char *const kernel_suffixes[] = {".rows1", ".rows16"};

/* Whether `key` is an op of the op table, or (format 2 on) one of its
 * kernels (ppcc_op_cost_key). */
static bool cost_key_valid(const char *key, int version) {
  if (ppcc_op_lookup(key)) return true;
  const char *dot = strrchr(key, '.');
  char op[32];
  if (version < 2 || !dot || (size_t)(dot - key) >= sizeof op) return false;
  memcpy(op, key, (size_t)(dot - key));
  op[dot - key] = 0;
  for (size_t i = 0; i < sizeof kernel_suffixes / sizeof *kernel_suffixes; i++)
    if (strcmp(dot, kernel_suffixes[i]) == 0) return ppcc_op_lookup(op) != NULL;
  return false;
}

/* The optional per-op costs object `field` (op name or kernel key:
 * {call_us, ns_per_flop, ns_per_byte[, ns_per_weight_byte]}), each entry
 * stored by set. */
static ppcc_status read_op_costs(const cJSON *root, const char *path, const char *field, ppcc_calibration *c,
                                 bool (*set)(ppcc_calibration *, const ppcc_op_cost *), ppcc_diag *d) {
  const cJSON *costs = cJSON_GetObjectItemCaseSensitive(root, field);
  if (costs && !cJSON_IsObject(costs)) return bad_field(path, field, "is not an object (op name: its cost)", d);
  for (const cJSON *e = costs ? costs->child : NULL; e; e = e->next) {
    ppcc_op_cost k = {0};
    char name[96];
    snprintf(name, sizeof name, "%s.%.40s", field, e->string);
    if (!cost_key_valid(e->string, c->version) || strlen(e->string) >= sizeof k.name)
      return bad_field(path, name, "names no op of the op table (or OP.rows1, OP.rows16 from format 2 on)", d);
    snprintf(k.name, sizeof k.name, "%s", e->string);
    static const char *const parts[5] = {"call_us", "ns_per_flop", "ns_per_byte", "ns_per_weight_byte",
                                         "ns_per_cold_weight_byte"};
    double *dst[5] = {&k.call_us, &k.ns_per_flop, &k.ns_per_byte, &k.ns_per_weight_byte, &k.ns_per_cold_weight_byte};
    bool cold = false;
    for (int i = 0; i < 5; i++) {
      const cJSON *x = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, parts[i]) : NULL;
      if (i >= 3 && cJSON_IsObject(e) && !x) continue; /* optional: 0, and the cold cost the weight byte's */
      if (!cost_number(x) || (i == 4 && c->version < 3))
        return bad_field(path, name, "needs call_us, ns_per_flop and ns_per_byte (and optional ns_per_weight_byte, from format 3 on ns_per_cold_weight_byte), numbers in [0, 1e6]", d);
      *dst[i] = x->valuedouble;
      cold = cold || i == 4;
    }
    if (!cold) k.ns_per_cold_weight_byte = k.ns_per_weight_byte;
    if (!set(c, &k)) return bad_field(path, field, "has more than 64 ops", d);
  }
  return PPCC_OK;
}

static ppcc_status parse_calibration(const cJSON *root, const char *path, ppcc_calibration *c, ppcc_diag *d) {
  if (!cJSON_IsObject(root)) return ppcc_error(d, "%s: a calibration file is a JSON object", path);
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "ppcc_calibration");
  if (!cJSON_IsNumber(ver) || ver->valuedouble < 1 || ver->valuedouble > PPCC_CALIBRATION_VERSION ||
      ver->valuedouble != floor(ver->valuedouble))
    return ppcc_error(d, "%s: calibration field 'ppcc_calibration' is missing or not a format this ppcc reads (1 to %d; write "
                         "the file with 'ppcc calibrate')", path, PPCC_CALIBRATION_VERSION);
  c->version = (int)ver->valuedouble;
  int n = 0; /* the entries of every rate, one per thread count */
  for (size_t i = 0; i < sizeof calib_fields / sizeof *calib_fields; i++) {
    ppcc_status st = read_field(root, path, &calib_fields[i], c, &n, d);
    if (st) return st;
  }
  const cJSON *jfs = cJSON_GetObjectItemCaseSensitive(root, "jit_threads_factors");
  if (jfs && (c->version < 3 || !cJSON_IsObject(jfs)))
    return bad_field(path, "jit_threads_factors", "is not an object (cost key: factor; from format 3 on)", d);
  for (const cJSON *e = jfs ? jfs->child : NULL; e; e = e->next) {
    char name[96];
    snprintf(name, sizeof name, "jit_threads_factors.%.40s", e->string);
    if (!cost_key_valid(e->string, c->version) || strlen(e->string) >= sizeof c->jit_threads_factors[0].name ||
        !cost_number(e) || e->valuedouble > 100)
      return bad_field(path, name, "is not a cost key of the op table with a number in [0, 100]", d);
    if (c->n_jit_threads_factors >= PPCC_CALIB_MAX_OPS) return bad_field(path, "jit_threads_factors", "has more than 64 keys", d);
    ppcc_key_factor *k = &c->jit_threads_factors[c->n_jit_threads_factors++];
    snprintf(k->name, sizeof k->name, "%s", e->string);
    k->factor = e->valuedouble;
  }
  ppcc_status cst = read_op_costs(root, path, "op_costs", c, ppcc_calibration_set_op_cost, d);
  if (!cst) cst = read_op_costs(root, path, "jit_op_costs", c, ppcc_calibration_set_jit_op_cost, d);
  if (!cst) cst = read_op_costs(root, path, "op_costs_multithreaded", c, ppcc_calibration_set_op_cost_many, d);
  if (cst) return cst;
  const cJSON *many = cJSON_GetObjectItemCaseSensitive(root, "op_costs_threads");
  if (many || c->n_op_costs_many > 0) {
    if (!cJSON_IsNumber(many) || many->valuedouble < 2 || many->valuedouble > PPCC_CALIB_MAX_THREADS ||
        many->valuedouble != floor(many->valuedouble))
      return bad_field(path, "op_costs_threads", "is missing or not an integer in [2, 64] (the threads of op_costs_multithreaded)", d);
    c->many_threads = (int)many->valuedouble;
  }
  static const char *const cut_fields[2] = {"jit_operand_cut", "operand_cut"};
  ppcc_op_cost *cut_dst[2] = {&c->jit_cut, &c->cut};
  bool *have_cut[2] = {&c->have_jit_cut, &c->have_cut};
  for (int f = 0; f < 2; f++) {
    const cJSON *cut = cJSON_GetObjectItemCaseSensitive(root, cut_fields[f]);
    if (!cut) continue;
    static const char *const parts[2] = {"call_us", "ns_per_byte"};
    double *dst[2] = {&cut_dst[f]->call_us, &cut_dst[f]->ns_per_byte};
    for (int i = 0; i < 2; i++) {
      const cJSON *x = cJSON_IsObject(cut) ? cJSON_GetObjectItemCaseSensitive(cut, parts[i]) : NULL;
      if (!cost_number(x))
        return bad_field(path, cut_fields[f], "needs call_us and ns_per_byte, numbers in [0, 1e6]", d);
      *dst[i] = x->valuedouble;
    }
    snprintf(cut_dst[f]->name, sizeof cut_dst[f]->name, "cut");
    *have_cut[f] = true;
  }
  c->calibrated = true;
  return PPCC_OK;
}

/* A cost table (op_costs or jit_op_costs): the entry of op `name`, and
 * storing one (replacing the op's entry; false when the table is full). */
static const ppcc_op_cost *cost_in(const ppcc_op_cost *table, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(table[i].name, name) == 0) return &table[i];
  return NULL;
}

static bool cost_store(ppcc_op_cost *table, int *n, const ppcc_op_cost *cost) {
  ppcc_op_cost *slot = (ppcc_op_cost *)cost_in(table, *n, cost->name);
  if (!slot && *n >= PPCC_CALIB_MAX_OPS) return false;
  if (!slot) slot = &table[(*n)++];
  *slot = *cost;
  return true;
}

const ppcc_op_cost *ppcc_calibration_op_cost(const ppcc_calibration *c, const char *name) {
  return c ? cost_in(c->op_costs, c->n_op_costs, name) : NULL;
}

bool ppcc_calibration_set_op_cost(ppcc_calibration *c, const ppcc_op_cost *cost) {
  return cost_store(c->op_costs, &c->n_op_costs, cost);
}

const ppcc_op_cost *ppcc_calibration_jit_op_cost(const ppcc_calibration *c, const char *name) {
  return c ? cost_in(c->jit_op_costs, c->n_jit_op_costs, name) : NULL;
}

bool ppcc_calibration_set_jit_op_cost(ppcc_calibration *c, const ppcc_op_cost *cost) {
  return cost_store(c->jit_op_costs, &c->n_jit_op_costs, cost);
}

const ppcc_op_cost *ppcc_calibration_op_cost_many(const ppcc_calibration *c, const char *name) {
  return c ? cost_in(c->op_costs_many, c->n_op_costs_many, name) : NULL;
}

bool ppcc_calibration_set_op_cost_many(ppcc_calibration *c, const ppcc_op_cost *cost) {
  return cost_store(c->op_costs_many, &c->n_op_costs_many, cost);
}

double ppcc_calibration_jit_threads_factor(const ppcc_calibration *c, const ppcc_graph *g, const ppcc_op *op) {
  char key[48];
  ppcc_op_cost_key(g, op, key, sizeof key);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < c->n_jit_threads_factors; i++)
      if (strcmp(c->jit_threads_factors[i].name, pass ? op->info->name : key) == 0) return c->jit_threads_factors[i].factor;
  return c->jit_threads_factor;
}

ppcc_status ppcc_calibration_parse(const char *path, const char *text, size_t len, ppcc_calibration *c, ppcc_diag *d) {
  ppcc_calibration_defaults(c);
  cJSON *root = NULL;
  ppcc_status st = ppcc_json_parse_strict(path, text, len, PPCC_JSON_DUPLICATES_REFUSED, &root, d);
  if (!st) st = parse_calibration(root, path, c, d);
  cJSON_Delete(root);
  if (st) ppcc_calibration_defaults(c);
  return st;
}

ppcc_status ppcc_calibration_read(const char *path, ppcc_calibration *c, ppcc_diag *d) {
  ppcc_calibration_defaults(c);
  size_t len = 0;
  char *text = ppcc_read_file(path, &len, d);
  if (!text) return d->errors ? PPCC_ERR_USER : PPCC_ERR_INTERNAL;
  ppcc_status st = ppcc_calibration_parse(path, text, len, c, d);
  free(text);
  return st;
}

/* Field f of the table (after the fields before it), unless optional and
 * at its default: a cost not above 0 means not measured, a residual
 * (field_min below 0) is one whatever its sign. */
static void write_field(FILE *fp, const calib_field *f, const ppcc_calibration *c) {
  const char *at = (const char *)c + f->at;
  switch (f->kind) {
  case CAL_TEXT:
    if (!f->required && !at[0]) return;
    fprintf(fp, ",\n  \"%s\": \"", f->key);
    ppcc_escape_fputs(fp, at, PPCC_ESCAPE_JSON);
    fputc('"', fp);
    return;
  case CAL_INTEGER: {
    int v = *(const int *)at;
    if (f->required || v != 0) fprintf(fp, ",\n  \"%s\": %d", f->key, v);
    return;
  }
  case CAL_NUMBER: {
    double v = *(const double *)at;
    if (f->required || (field_min(f, PPCC_CALIBRATION_VERSION) < 0 ? v != 0 : v > 0))
      fprintf(fp, f->exact ? ",\n  \"%s\": %.17g" : ",\n  \"%s\": %.6g", f->key, v);
    return;
  }
  case CAL_RATES: {
    int n = *(const int *)((const char *)c + f->count_at);
    if (!f->required && n <= 0) return;
    fprintf(fp, ",\n  \"%s\": [", f->key);
    for (int i = 0; i < n; i++) fprintf(fp, i ? ", %.6g" : "%.6g", ((const double *)at)[i]);
    fputc(']', fp);
    return;
  }
  }
}

static void write_op_costs(FILE *f, const char *field, const ppcc_op_cost *costs, int n) {
  if (n <= 0) return;
  fprintf(f, ",\n  \"%s\": {", field);
  for (int i = 0; i < n; i++)
    fprintf(f,
            "%s\n    \"%s\": {\"call_us\": %.6g, \"ns_per_flop\": %.6g, \"ns_per_byte\": %.6g, \"ns_per_weight_byte\": %.6g, "
            "\"ns_per_cold_weight_byte\": %.6g}",
            i ? "," : "", costs[i].name, costs[i].call_us, costs[i].ns_per_flop, costs[i].ns_per_byte,
            costs[i].ns_per_weight_byte, costs[i].ns_per_cold_weight_byte);
  fputs("\n  }", f);
}

ppcc_status ppcc_calibration_write(const char *path, const ppcc_calibration *c, ppcc_diag *d) {
  ppcc_outfile f;
  ppcc_status st = ppcc_outfile_open(&f, path, d);
  if (st) return st;
  return ppcc_calibration_write_to(&f, c, d);
}

ppcc_status ppcc_calibration_write_to(ppcc_outfile *f, const ppcc_calibration *c, ppcc_diag *d) {
  ppcc_status st;
  fprintf(f->fp, "{\n  \"ppcc_calibration\": %d", PPCC_CALIBRATION_VERSION);
  for (size_t i = 0; i < sizeof calib_fields / sizeof *calib_fields; i++) write_field(f->fp, &calib_fields[i], c);
  if (c->n_jit_threads_factors > 0) {
    fputs(",\n  \"jit_threads_factors\": {", f->fp);
    for (int i = 0; i < c->n_jit_threads_factors; i++)
      fprintf(f->fp, "%s\"%s\": %.6g", i ? ", " : "", c->jit_threads_factors[i].name, c->jit_threads_factors[i].factor);
    fputc('}', f->fp);
  }
  write_op_costs(f->fp, "op_costs", c->op_costs, c->n_op_costs);
  write_op_costs(f->fp, "jit_op_costs", c->jit_op_costs, c->n_jit_op_costs);
  if (c->many_threads > 1 && c->n_op_costs_many > 0) {
    fprintf(f->fp, ",\n  \"op_costs_threads\": %d", c->many_threads);
    write_op_costs(f->fp, "op_costs_multithreaded", c->op_costs_many, c->n_op_costs_many);
  }
  if (c->have_jit_cut)
    fprintf(f->fp, ",\n  \"jit_operand_cut\": {\"call_us\": %.6g, \"ns_per_byte\": %.6g}", c->jit_cut.call_us,
            c->jit_cut.ns_per_byte);
  if (c->have_cut)
    fprintf(f->fp, ",\n  \"operand_cut\": {\"call_us\": %.6g, \"ns_per_byte\": %.6g}", c->cut.call_us, c->cut.ns_per_byte);
  fputs("\n}\n", f->fp);
  st = ppcc_outfile_close(f, d);
  if (st) {
    ppcc_outfile_abort(f);
    return st;
  }
  return ppcc_outfile_commit(f, d);
}

/* ---------------- the executor's order and lifetimes ---------------- */

static int shard_count(const ppcc_value *v) { return v->layout.count > 0 ? v->layout.count : 1; }

static bool in_place(const ppcc_op *op) {
  return op->info && op->info->family == PPCC_FAMILY_COMPUTE && op->info->pin_rule == PPCC_PIN_INPLACE &&
         op->n_in > 0 && op->n_out > 0;
}

/* As plan_lifetimes in executor.c: the last op reading each value; graph
 * outputs are kept (n_ops); an in-place destination, and the operand of a
 * view (views[j]), lives as long as its result. The JIT (jit_alias: per
 * value, jit_alias_mask; NULL for the interpreter) copies an in-place
 * destination instead, a layout change sharing its operand's buffer
 * keeps that alive as a view does, and an output's buffer is copied into
 * its output argument after its last reader, then freed. */
static void plan_lifetimes(const ppcc_graph *g, const bool *views, const uint64_t *jit_alias, int *last_use) {
  for (int v = 0; v < g->n_values; v++) last_use[v] = -1;
  for (int j = 0; j < g->n_ops; j++)
    for (int k = 0; k < g->ops[j].n_in; k++) last_use[g->ops[j].in[k]] = j;
  for (int k = 0; !jit_alias && k < g->n_outputs; k++) last_use[g->outputs[k]] = g->n_ops;
  for (int j = g->n_ops - 1; j >= 0; j--) {
    const ppcc_op *op = &g->ops[j];
    if (op->n_in < 1 || op->n_out < 1) continue;
    bool aliases = (views && views[j]) || (jit_alias ? jit_alias[op->out[0]] != 0
                                                     : op->info && op->info->pin_rule == PPCC_PIN_INPLACE);
    if (!aliases) continue;
    int dst = op->in[0], res = op->out[0];
    if (last_use[res] > last_use[dst]) last_use[dst] = last_use[res];
    if (last_use[res] < 0 && last_use[dst] < j) last_use[dst] = j;
  }
}

/* ---------------- memory simulation ---------------- */

enum { MEM_PARAM, MEM_ACT, MEM_KV, MEM_TRANSFER, MEM_KINDS };

typedef struct mem_sim {
  const ppcc_graph *g;
  int m;               /* microbatches */
  const bool *views;   /* per op: its result is a view of operand 0; NULL: none */
  bool jit;            /* the JIT executor's buffers (ppcc_predict_options.jit) */
  int64_t *bytes;      /* per value: one shard of one microbatch */
  char *kind;          /* per value: MEM_* */
  bool *owns;          /* per value: holds its own buffers (not an in-place alias) */
  uint64_t *alias;     /* per value, JIT: bit i set when shard i is its operand's
                          buffer or a view of it (jit_alias_mask) */
  int *last_use;
  bool *freed;         /* [mb * n_values + v] */
  int64_t *live;       /* [dev * MEM_KINDS + kind] */
  int64_t *total;      /* per device */
  int64_t *act_mb;     /* [dev * m + mb]: activation bytes of microbatch mb */
  int *in_flight;      /* per device: microbatches with activation bytes */
  ppcc_device_prediction *rows;
} mem_sim;

static void account(mem_sim *s, int dev, int v, int mb, int sign) {
  if (dev < 0 || dev >= s->g->n_devices) return;
  int64_t b = sign * s->bytes[v];
  s->live[dev * MEM_KINDS + s->kind[v]] += b;
  s->total[dev] += b;
  if (s->kind[v] == MEM_ACT) {
    int64_t *a = &s->act_mb[(size_t)dev * (size_t)s->m + (size_t)mb];
    bool was = *a > 0;
    *a += b;
    s->in_flight[dev] += (*a > 0) - was;
  }
}

static void note_peak(mem_sim *s, int dev) {
  if (dev < 0 || dev >= s->g->n_devices) return;
  ppcc_device_prediction *r = &s->rows[dev];
  if (s->total[dev] <= r->peak_bytes) return;
  r->peak_bytes = s->total[dev];
  r->param_bytes = s->live[dev * MEM_KINDS + MEM_PARAM];
  r->activation_bytes = s->live[dev * MEM_KINDS + MEM_ACT];
  r->kv_cache_bytes = s->live[dev * MEM_KINDS + MEM_KV];
  r->transfer_bytes = s->live[dev * MEM_KINDS + MEM_TRANSFER];
  r->microbatches_in_flight = s->in_flight[dev];
}

static void add_value(mem_sim *s, int v, int mb, int sign) {
  const ppcc_value *p = &s->g->values[v];
  for (int i = 0; i < shard_count(p); i++)
    if (i >= 64 || !(s->alias[v] >> i & 1)) account(s, rep_shard_device(p, i), v, mb, sign);
}

/* JIT (src/emit/exec/exec_comm.c): the shards of a layout change that hold no
 * buffer of their own. A one-shard operand is a whole value. Shard j is
 * produced on its home (the operand's shard j, or its one shard) and, if
 * that is not its device, sent and received into a new buffer. Produced:
 * whole to whole, or split to split on the same dim, is the operand
 * itself; whole to split cuts a slice (tensor.extract_slice), which
 * One-Shot Bufferize leaves a view when it starts at offset 0 of a split
 * whose leading dims are 1, and copies otherwise; gathers, reductions and
 * collects into one device write new buffers. */
static uint64_t jit_alias_mask(const ppcc_graph *g, const ppcc_op *op) {
  if (!op->info || op->info->family == PPCC_FAMILY_COMPUTE || op->n_in != 1 || op->n_out != 1) return 0;
  const ppcc_value *in = &g->values[op->in[0]], *out = &g->values[op->out[0]];
  if (!in->devices || !out->devices || in->layout.count < 1 || out->layout.count > 64) return 0;
  ppcc_layout_kind ik = in->layout.count == 1 ? PPCC_LAYOUT_UNSHARDED : in->layout.kind, ok = out->layout.kind;
  bool whole_in = ik == PPCC_LAYOUT_UNSHARDED || ik == PPCC_LAYOUT_REPLICATED;
  bool whole_out = ok == PPCC_LAYOUT_UNSHARDED || ok == PPCC_LAYOUT_REPLICATED;
  if (!whole_in && in->layout.count != out->layout.count) return 0;
  bool copy = (whole_in && whole_out) || (ik == PPCC_LAYOUT_SPLIT && ok == PPCC_LAYOUT_SPLIT && in->layout.dim == out->layout.dim);
  bool cut = whole_in && ok == PPCC_LAYOUT_SPLIT && out->layout.dim >= 0 && out->layout.dim < out->rank;
  for (int r = 0; cut && r < out->layout.dim; r++)
    if (out->shape[r] != 1) cut = false;
  uint64_t mask = 0;
  for (int j = 0; j < out->layout.count; j++) {
    int home = in->layout.count == 1 ? in->devices[0] : in->devices[j];
    if (home == out->devices[j] && (copy || (cut && j == 0))) mask |= (uint64_t)1 << j;
  }
  return mask;
}

static void peak_value(mem_sim *s, int v) {
  const ppcc_value *p = &s->g->values[v];
  for (int i = 0; i < shard_count(p); i++) note_peak(s, rep_shard_device(p, i));
}

/* release_value of executor.c, on every device holding a shard. */
static void release(mem_sim *s, int v, int mb, int j) {
  size_t f = (size_t)mb * (size_t)s->g->n_values + (size_t)v;
  ppcc_value_kind kind = s->g->values[v].kind;
  if (s->last_use[v] != j || kind == PPCC_VALUE_PARAM || !s->owns[v] || s->freed[f]) return;
  if (s->jit && kind == PPCC_VALUE_INPUT) return; /* the JIT's inputs are arguments, held for the run */
  s->freed[f] = true;
  add_value(s, v, mb, -1);
}

/* The operand whose buffer v is (v a view of it, or a JIT layout change
 * sharing it), or -1. */
static int aliased_operand(const mem_sim *s, int v) {
  int d = s->g->values[v].def_op;
  if (d < 0) return -1;
  const ppcc_op *op = &s->g->ops[d];
  bool alias = op->n_in > 0 && op->n_out > 0 && op->out[0] == v && ((s->views && s->views[d]) || s->alias[v]);
  return alias ? op->in[0] : -1;
}

/* JIT: the copy a shard kernel makes of a replicated operand of a
 * row-parallel contraction (unreduced result, the other operand split),
 * cut to its shard's part along the contracting dim (lower_ops.c's
 * contract_operand), live while the kernel runs. */
static int64_t jit_slice_scratch(const mem_sim *s, const ppcc_op *op) {
  if (!s->jit || !op->info || op->info->family != PPCC_FAMILY_COMPUTE || op->n_in < 2 || op->n_out < 1) return 0;
  const ppcc_value *out = &s->g->values[op->out[0]];
  if (out->layout.kind != PPCC_LAYOUT_UNREDUCED) return 0;
  int64_t bytes = 0;
  for (int k = 0; k < 2; k++) {
    const ppcc_value *x = &s->g->values[op->in[k]], *other = &s->g->values[op->in[1 - k]];
    if (x->layout.kind == PPCC_LAYOUT_REPLICATED && other->layout.kind == PPCC_LAYOUT_SPLIT && other->layout.count > 0)
      bytes += s->bytes[op->in[k]] / other->layout.count;
  }
  return bytes;
}

static void step(mem_sim *s, int j, int mb) {
  const ppcc_op *op = &s->g->ops[j];
  for (int r = 0; r < op->n_out; r++)
    if (s->owns[op->out[r]]) add_value(s, op->out[r], mb, +1);
  int64_t scratch = jit_slice_scratch(s, op); /* counted as activations while the op runs */
  for (int i = 0; scratch && i < shard_count(&s->g->values[op->out[0]]); i++) {
    int dev = rep_shard_device(&s->g->values[op->out[0]], i);
    if (dev < 0 || dev >= s->g->n_devices) continue;
    s->live[dev * MEM_KINDS + MEM_ACT] += scratch, s->total[dev] += scratch;
    note_peak(s, dev);
    s->live[dev * MEM_KINDS + MEM_ACT] -= scratch, s->total[dev] -= scratch;
  }
  for (int r = 0; r < op->n_out; r++) peak_value(s, op->out[r]);
  for (int k = 0; k < op->n_in; k++) release(s, op->in[k], mb, j);
  for (int k = 0; s->jit && k < op->n_in; k++) /* the JIT frees a view's buffer after the view's last reader */
    for (int v = aliased_operand(s, op->in[k]); v >= 0; v = aliased_operand(s, v)) release(s, v, mb, j);
  for (int r = 0; r < op->n_out; r++)
    if (s->last_use[op->out[r]] < 0) { /* never read: freed at once */
      s->last_use[op->out[r]] = j;
      release(s, op->out[r], mb, j);
      s->last_use[op->out[r]] = -1;
    }
}

/* Value classes and microbatch shard sizes. */
static void classify(mem_sim *s) {
  const ppcc_graph *g = s->g;
  bool *carries = calloc((size_t)g->n_values + 1, sizeof *carries);
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    s->kind[v] = p->kind == PPCC_VALUE_PARAM ? MEM_PARAM : MEM_ACT;
    s->owns[v] = true;
    s->alias[v] = 0;
    if (carries) carries[v] = p->kind == PPCC_VALUE_INPUT;
  }
  for (int j = 0; j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    bool moves = op->info && op->info->family != PPCC_FAMILY_COMPUTE;
    bool c = false;
    for (int k = 0; carries && k < op->n_in; k++) c = c || carries[op->in[k]];
    for (int r = 0; r < op->n_out; r++) {
      if (moves) s->kind[op->out[r]] = MEM_TRANSFER;
      if (carries) carries[op->out[r]] = c;
    }
    if (s->views && s->views[j] && op->n_out > 0) s->owns[op->out[0]] = false; /* the operand's bytes */
    if (s->jit) s->alias[op->out[0]] = jit_alias_mask(g, op);
    if (in_place(op)) {
      s->owns[op->out[0]] = s->jit; /* the JIT copies the destination into a new result */
      if (s->kind[op->in[0]] != MEM_PARAM) s->kind[op->in[0]] = MEM_KV;
    }
  }
  for (int v = 0; v < g->n_values; v++) {
    int64_t b = rep_shard_bytes(&g->values[v]);
    s->bytes[v] = carries && carries[v] && s->m > 1 ? b / s->m : b;
  }
  free(carries);
}

static bool simulate_memory(const ppcc_graph *g, int m, const bool *views, bool jit, ppcc_device_prediction *rows) {
  size_t nv = (size_t)g->n_values + 1, nd = (size_t)(g->n_devices > 0 ? g->n_devices : 1);
  mem_sim s = {.g = g, .m = m, .views = views, .jit = jit, .rows = rows,
               .bytes = malloc(sizeof(int64_t) * nv), .kind = malloc(nv), .owns = malloc(nv), .alias = malloc(sizeof(uint64_t) * nv),
               .last_use = malloc(sizeof(int) * nv), .freed = calloc(nv * (size_t)m, 1),
               .live = calloc(nd * MEM_KINDS, sizeof(int64_t)), .total = calloc(nd, sizeof(int64_t)),
               .act_mb = calloc(nd * (size_t)m, sizeof(int64_t)), .in_flight = calloc(nd, sizeof(int))};
  int *begin = malloc(sizeof(int) * ((size_t)g->n_ops + 2));
  bool ok = s.bytes && s.kind && s.owns && s.alias && s.last_use && s.freed && s.live && s.total && s.act_mb && s.in_flight &&
            begin;
  if (ok) {
    classify(&s);
    plan_lifetimes(g, views, jit ? s.alias : NULL, s.last_use);
    for (int mb = 0; mb < m; mb++) /* load_leaves: params once, every microbatch's inputs */
      for (int v = 0; v < g->n_values; v++)
        if (g->values[v].kind == PPCC_VALUE_INPUT || (g->values[v].kind == PPCC_VALUE_PARAM && mb == 0))
          add_value(&s, v, mb, +1);
    for (int k = 0; jit && k < g->n_outputs; k++) /* the JIT's output arguments, besides the results copied in */
      for (int mb = 0; mb < m; mb++) add_value(&s, g->outputs[k], mb, +1);
    for (int d = 0; d < g->n_devices; d++) note_peak(&s, d);
    int n_seg = 1; /* one microbatch: program order, whatever the segments */
    begin[0] = 0, begin[1] = g->n_ops;
    if (m > 1) n_seg = ppcc_pipeline_segments(g, begin);
    for (int seg = 0; seg < n_seg; seg++)
      for (int mb = 0; mb < m; mb++)
        for (int j = begin[seg]; j < begin[seg + 1]; j++) step(&s, j, mb);
  }
  free(s.bytes);
  free(s.kind);
  free(s.owns);
  free(s.alias);
  free(s.last_use);
  free(s.freed);
  free(s.live);
  free(s.total);
  free(s.act_mb);
  free(s.in_flight);
  free(begin);
  return ok;
}

/* ---------------- time ---------------- */

static double rate_for(const double *table, int n, int threads) {
  int t = threads < 1 ? 1 : threads > n ? n : threads;
  double r = table[t - 1];
  if (threads > n) r *= (double)threads / n; /* defaults: linear in threads */
  return r;
}

void ppcc_predict_op_work(const ppcc_graph *g, const ppcc_op *op, double *flops, double *bytes, double *weight_bytes) {
  double b = 0, w = 0;
  for (int k = 0; k < op->n_in; k++) {
    const ppcc_value *v = &g->values[op->in[k]];
    *(v->kind == PPCC_VALUE_PARAM ? &w : &b) += (double)rep_shard_bytes(v);
  }
  if (op->n_out > 0) b += (double)rep_shard_bytes(&g->values[op->out[0]]);
  *flops = rep_op_flops_per_shard(g, op);
  *bytes = b;
  *weight_bytes = w;
}

bool ppcc_predict_is_contraction(const ppcc_graph *g, const ppcc_op *op) {
  if (!op->info || op->n_out < 1) return false;
  const ppcc_value *r = &g->values[op->out[0]];
  int64_t elems = ppcc_num_elements(r->rank, r->shape);
  double total = op->info->flops ? op->info->flops(g, op) : 0;
  return elems > 0 && total > 16.0 * (double)elems;
}

/* The rows of a contraction's GEMMs (ppcc_op_cost_key). */
static int64_t gemm_rows(const ppcc_graph *g, const ppcc_op *op) {
  const ppcc_value *r = &g->values[op->out[0]];
  int64_t shape[PPCC_MAX_RANK];
  ppcc_value_shard_shape(r, shape);
  int64_t rows = 1;
  if (g->values[op->in[1]].rank > 2) rows = r->rank >= 2 ? shape[r->rank - 2] : 1;
  else
    for (int i = 0; i + 1 < r->rank; i++) rows *= shape[i];
  return rows;
}

void ppcc_op_cost_key(const ppcc_graph *g, const ppcc_op *op, char *key, size_t n) {
  snprintf(key, n, "%s", op->info ? op->info->name : "");
  if (!ppcc_predict_is_contraction(g, op) || op->n_in < 2) return;
  int64_t rows = gemm_rows(g, op);
  if (rows <= PPCC_COST_SMALL_ROWS) snprintf(key, n, "%s%s", op->info->name, kernel_suffixes[rows > 1]);
}

bool ppcc_predict_op_splits(const ppcc_graph *g, const ppcc_op *op, int threads) {
  if (threads < 2 || !op->info || op->info->family != PPCC_FAMILY_COMPUTE || op->n_in < 2 ||
      !ppcc_predict_is_contraction(g, op))
    return false;
  double flops = rep_op_flops_per_shard(g, op); /* 2 per multiply-add */
  if (g->values[op->in[1]].rank > 2) return flops / 2 >= PPCC_COST_SPLIT_BATCHED_WORK; /* batched: attention's pairs */
  int64_t rows = gemm_rows(g, op);
  if (rows >= 1 && rows <= PPCC_COST_SMALL_ROWS) return flops / 2 / (double)rows >= 2.0 * PPCC_COST_SPLIT_SMALL_WORK;
  return flops / 2 >= 2.0 * PPCC_COST_SPLIT_TILES_WORK;
}

/* The cost of op's key (ppcc_op_cost_key) in a table, else of its op name. */
static const ppcc_op_cost *cost_of(const ppcc_calibration *c, const ppcc_graph *g, const ppcc_op *op,
                                   const ppcc_op_cost *(*lookup)(const ppcc_calibration *, const char *)) {
  char key[48];
  ppcc_op_cost_key(g, op, key, sizeof key);
  const ppcc_op_cost *k = lookup(c, key);
  return k ? k : lookup(c, op->info->name);
}

/* JIT: the bytes a row-parallel contraction's kernel reads to cut a
 * replicated operand to its shard's part (jit_slice_scratch), and writes:
 * what a slice op of that operand moves (0: none). */
static double jit_slice_bytes(const ppcc_graph *g, const ppcc_op *op) {
  if (!op->info || op->info->family != PPCC_FAMILY_COMPUTE || op->n_in < 2 || op->n_out < 1) return 0;
  if (g->values[op->out[0]].layout.kind != PPCC_LAYOUT_UNREDUCED) return 0;
  double bytes = 0;
  for (int k = 0; k < 2; k++) {
    const ppcc_value *x = &g->values[op->in[k]], *other = &g->values[op->in[1 - k]];
    if (x->layout.kind == PPCC_LAYOUT_REPLICATED && other->layout.kind == PPCC_LAYOUT_SPLIT && other->layout.count > 0)
      bytes += (double)rep_shard_bytes(x) * (1 + 1.0 / other->layout.count);
  }
  return bytes;
}

double ppcc_op_cost_us(const ppcc_op_cost *k, double flops, double bytes, double weights, double cold) {
  return k->call_us + (flops * k->ns_per_flop + bytes * k->ns_per_byte +
                       weights * ((1 - cold) * k->ns_per_weight_byte + cold * k->ns_per_cold_weight_byte)) *
                          1e-3;
}

double ppcc_predict_move_bytes(const ppcc_graph *g, const ppcc_op *op) {
  if (op->n_in < 1 || op->n_out < 1) return 0;
  return (double)rep_shard_bytes(&g->values[op->in[0]]) + (double)rep_shard_bytes(&g->values[op->out[0]]);
}

double ppcc_predict_cold_share(double param_bytes, double cache_bytes) {
  return cache_bytes > 0 && param_bytes > cache_bytes ? 1 - cache_bytes / param_bytes : 0;
}

double ppcc_predict_param_bytes(const ppcc_graph *g) {
  double b = 0;
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].kind == PPCC_VALUE_PARAM) b += (double)rep_shard_bytes(&g->values[v]) * shard_count(&g->values[v]);
  return b;
}

/* How an op's time with `threads` kernel threads compares with one
 * thread's, from the interpreter's two fits (op_costs, op_costs_many):
 * linear in the threads between 1 and many_threads, no faster beyond
 * (the file says nothing of more threads); 0 when the file cannot say. */
static double threads_ratio(const ppcc_calibration *c, const ppcc_graph *g, const ppcc_op *op, double flops,
                            double bytes, double weights, double cold, int threads) {
  const ppcc_op_cost *one = cost_of(c, g, op, ppcc_calibration_op_cost),
                     *many = cost_of(c, g, op, ppcc_calibration_op_cost_many);
  if (!one || !many || c->many_threads < 2) return 0;
  if (threads <= 1) return 1;
  double t1 = ppcc_op_cost_us(one, flops, bytes, weights, cold), tn = ppcc_op_cost_us(many, flops, bytes, weights, cold);
  if (t1 <= 0) return 0;
  int t = threads < c->many_threads ? threads : c->many_threads;
  return (t1 + (tn - t1) * (double)(t - 1) / (double)(c->many_threads - 1)) / t1;
}

/* CPU time of one microbatch's shard of compute op j on one device, in
 * ms, as if the device had a core to itself (sharing is simulate_pipeline's).
 * threads: the kernel threads a device gets; streams: devices of the
 * stage streaming memory at once (roofline: elementwise per-thread rate).
 * The op kind's calibrated cost when the file has one (the interpreter),
 * its GEMM-like part (FLOPs, for ops doing more than 16 per result
 * element) sped up as the sgemm rate with `threads` threads; else the
 * roofline. */
static double op_ms(const ppcc_graph *g, const ppcc_op *op, const bool *carries, int m, const ppcc_calibration *c,
                    int threads, int streams, double cold, bool use_costs, bool jit, double *flops_out, double *bytes_out) {
  bool c_op = false;
  for (int k = 0; k < op->n_in; k++) c_op = c_op || carries[op->in[k]];
  double flops, bytes, weights;
  ppcc_predict_op_work(g, op, &flops, &bytes, &weights);
  if (c_op && m > 1) { /* batch-carrying operands and result shrink by M; params do not */
    bytes = 0;
    for (int k = 0; k < op->n_in; k++) {
      double b = (double)rep_shard_bytes(&g->values[op->in[k]]);
      if (g->values[op->in[k]].kind != PPCC_VALUE_PARAM) bytes += carries[op->in[k]] ? b / m : b;
    }
    bytes += (double)rep_shard_bytes(&g->values[op->out[0]]) / m;
    flops /= m;
  }
  *flops_out = flops;
  *bytes_out = bytes + weights;
  bool contraction = ppcc_predict_is_contraction(g, op);
  double gemm_speedup = rate_for(c->gemm_gflops, c->n_threads, threads) / c->gemm_gflops[0];
  const ppcc_op_cost *k = !use_costs || !op->info ? NULL
                          : cost_of(c, g, op, jit ? ppcc_calibration_jit_op_cost : ppcc_calibration_op_cost);
  if (k) {
    /* with threads: as measured (the JIT calls the same sgemm), else (an
     * older file) a contraction's FLOPs at the sgemm rate */
    double ratio = threads_ratio(c, g, op, flops, bytes, weights, cold, threads);
    double us = ratio > 0 ? ppcc_op_cost_us(k, flops, bytes, weights, cold) * ratio
                          : ppcc_op_cost_us(k, contraction ? flops / gemm_speedup : flops, bytes, weights, cold);
    /* the kernel first cuts a replicated operand to its part (both
     * backends): the measured cut, else (the JIT) as its slice op */
    const ppcc_op_cost *cut = !jit ? (c->have_cut ? &c->cut : NULL)
                              : c->have_jit_cut ? &c->jit_cut : ppcc_calibration_jit_op_cost(c, "slice");
    double cut_bytes = cut ? jit_slice_bytes(g, op) : 0;
    if (cut_bytes > 0) us += cut->call_us + cut_bytes * cut->ns_per_byte * 1e-3;
    int many = c->many_threads > 1 ? c->many_threads : c->n_threads;
    double f = jit ? ppcc_calibration_jit_threads_factor(c, g, op) : 0;
    if (threads > 1 && many > 1 && f > 0) us *= 1 + (f - 1) * (double)((threads < many ? threads : many) - 1) / (many - 1);
    return us * 1e-3;
  }
  int at = (streams < c->n_threads ? streams : c->n_threads) - 1;
  double rate = contraction ? rate_for(c->gemm_gflops, c->n_threads, threads) * 1e9 : c->elementwise_gflops[at] * 1e9;
  double bw = c->elementwise_gbps[at] * 1e9;
  bytes += weights;
  double t = flops / rate > bytes / bw ? flops / rate : bytes / bw;
  return ((c->op_overhead_us + (contraction ? c->gemm_call_us : 0)) * 1e-6 + t) * 1e3;
}
/* Whether op reads weights: a param operand, or a contraction's matrix
 * (a gathered weight is a result). The first such op after its device
 * waited pays resume_us: the wait let other device threads push its
 * weights out of the core's caches, while what a transfer or collective
 * just wrote is hot (measured, interpreter, inserted_collectives' first
 * stage: a 4x16x32 matmul after the forward's first all_gather 0.75 us
 * more than its cost, the concat after the next all_gather 0.2; an add
 * after an all_reduce in tiny_llama 0.3-0.45, where a resume is 0.6-1.3). */
static bool reads_weights(const ppcc_graph *g, const ppcc_op *op) {
  if (ppcc_predict_is_contraction(g, op)) return true;
  for (int k = 0; k < op->n_in; k++)
    if (g->values[op->in[k]].kind == PPCC_VALUE_PARAM) return true;
  return false;
}

/* The bit of param v's shard on device dev in a mask of its shards (its
 * first 64; 0: none there). */
static uint64_t shard_bit(const ppcc_graph *g, int v, int dev) {
  const ppcc_value *p = &g->values[v];
  for (int i = 0; i < shard_count(p) && i < 64; i++)
    if (rep_shard_device(p, i) == dev) return (uint64_t)1 << i;
  return 0;
}

/* Whether every param op reads on device dev was read there since the
 * segment began (read: per value, a mask of its shards read; false when
 * op reads no param, e.g. a contraction of a gathered matrix): it is still
 * in the core's caches after the wait, so the interpreter's op after it
 * pays no resume (measured, inserted_collectives' second stage: the linear
 * after the all_reduce, reading the weight and bias the linear before it
 * read, took 0.8-1.05 us in all, its cost alone 0.64-1.13 with the resume
 * 1.0 predicted on top; ppffn's matmuls after an all_reduce, new weights,
 * 0.4-1.0 us more than their cost). */
static bool params_read_before(const ppcc_graph *g, const ppcc_op *op, const uint64_t *read, int dev) {
  bool params = false;
  for (int k = 0; k < op->n_in; k++) {
    if (g->values[op->in[k]].kind != PPCC_VALUE_PARAM) continue;
    uint64_t bit = shard_bit(g, op->in[k], dev);
    if (!bit || !(read[op->in[k]] & bit)) return false;
    params = true;
  }
  return params;
}

/* Marks op's param operands read on device dev (params_read_before). */
static void note_weights_read(const ppcc_graph *g, const ppcc_op *op, uint64_t *read, int dev) {
  for (int k = 0; k < op->n_in; k++)
    if (g->values[op->in[k]].kind == PPCC_VALUE_PARAM) read[op->in[k]] |= shard_bit(g, op->in[k], dev);
}

/* Relative speed of a device: the options' array, else the --devices-spec
 * the model was partitioned with, else 1.0. */
static double device_speed(const ppcc_graph *g, const ppcc_predict_options *o, int dev) {
  if (o && o->device_speed && o->device_speed[dev] > 0) return o->device_speed[dev];
  return ppcc_devices_spec_speed(g->partition.devices_spec, dev);
}

/* A device's compute between two waits (predict_time). */
typedef struct run_piece {
  double ms;      /* CPU time, one microbatch */
  size_t cell;    /* stage * devices + device */
  bool staggered; /* released by a collective or transfer */
} run_piece;

/* Adds the part of the piece that can overlap other devices' compute to
 * overlap[cell]: all of it, or what lasts beyond one hand-over when the
 * devices were released one after the other. */
static void close_piece(run_piece *r, double *overlap, double hop_ms) {
  if (r->ms > 0) overlap[r->cell] += r->staggered ? (r->ms > hop_ms ? r->ms - hop_ms : 0) : r->ms;
  r->ms = 0;
  r->staggered = false;
}

/* The pipeline as the runtime runs it: stage k (n[k] devices, work[k] ms
 * of CPU per microbatch on its slowest device) runs microbatch i once it
 * ran i - 1 and stage k - 1 handed i over (hop_ms after finishing it).
 * Device threads block while they wait (condition variables), and a
 * running thread keeps its core until it blocks: the OS does not preempt
 * it for the short runs of a forward. So a stage runs when it has a
 * microbatch and cores for its devices are free (first come, first
 * served), keeps them while its next microbatch has arrived, and a stage
 * with more devices than cores runs at cores / devices (its devices block
 * on each other's collectives, so they take turns). While t devices
 * compute at once, stage k's microbatch (overlap[k] of its work able to
 * overlap the others') takes (1 + (slow[t-1] - 1) * overlap[k]) * work[k]
 * (n_slow entries, the last one beyond).
 * wire[k] and latency[k] (NULL: none) are the link into stage k, one
 * microbatch at a time; wire[p], latency[p] the link out of the last stage
 * (a gather back: ppcc_pipeline_segments runs it after every microbatch).
 * busy[k] is the wall time stage k computes (what
 * --check-plan measures: compute spans); returns the wall time of the
 * run, -1 when out of memory. */
static double simulate_pipeline(int p, int m, const int *n, const uint64_t *on_cores, const double *work,
                                const double *overlap, int cores, double hop_ms, const double *slow, int n_slow,
                                const double *wire, const double *latency, double *busy) {
  size_t np = (size_t)p + 1;
  /* arr[k * m + i]: when microbatch i reaches stage k (stage k - 1 done,
   * its link free, the bytes and the latency over it, the hand-over) */
  double *arr = malloc(sizeof(double) * (size_t)p * (size_t)m + 1), *link_free = calloc(np, sizeof(double));
  double *rem = malloc(sizeof(double) * np);
  double *since = malloc(sizeof(double) * np); /* when stage k's waiting microbatch arrived */
  double *speed = malloc(sizeof(double) * np);
  int *next = calloc(np, sizeof *next);
  bool *running = calloc(np, sizeof *running);
  double now = 0, tail_end = 0;
  if (!arr || !link_free || !rem || !since || !speed || !next || !running) {
    free(arr), free(link_free), free(rem), free(since), free(speed), free(next), free(running);
    return -1;
  }
  for (int k = 0; k < p; k++) busy[k] = 0, since[k] = INFINITY;
#define ARRIVAL(k) \
  (next[k] >= m ? INFINITY : (k) == 0 ? 0 : next[(k) - 1] > next[k] ? arr[(size_t)(k) * m + next[k]] : INFINITY)
  int free_cores = cores;
  uint64_t taken = 0; /* with on_cores: the cores computing stages hold */
  for (;;) {
    double arrive = INFINITY; /* the next hand-over still on its way */
    bool left = false;
    for (int k = 0; k < p; k++) {
      left = left || next[k] < m;
      if (running[k]) continue;
      double ready = ARRIVAL(k);
      if (ready <= now && since[k] > ready) since[k] = ready;
      else if (ready > now && ready < arrive) arrive = ready;
    }
    if (!left) break;
    for (;;) { /* start waiting stages, longest waiting first, while cores are free (their own, when pinned) */
      int pick = -1;
      for (int k = 0; k < p; k++)
        if (!running[k] && isfinite(since[k]) && (pick < 0 || since[k] < since[pick]) &&
            (!on_cores || !(on_cores[k] & taken)))
          pick = k;
      int need = pick < 0 ? 0 : n[pick] < cores ? n[pick] : cores;
      if (pick < 0 || need > free_cores) break;
      free_cores -= need;
      if (on_cores) taken |= on_cores[pick];
      running[pick] = true;
      since[pick] = INFINITY;
      rem[pick] = work[pick] > 0 ? work[pick] : 0;
    }
    int on = cores - free_cores, at = on < n_slow ? on - 1 : n_slow - 1; /* devices computing now */
    double step = arrive - now;
    for (int k = 0; k < p; k++) {
      /* speed: work done per wall ms */
      double contention = at < 0 ? 1.0 : 1 + (slow[at] - 1) * overlap[k];
      speed[k] = (n[k] > cores ? (double)cores / n[k] : 1.0) / contention;
      if (running[k] && rem[k] / speed[k] < step) step = rem[k] / speed[k];
    }
    if (!isfinite(step)) break; /* nothing can run: not a chain (cannot happen) */
    now += step;
    for (int k = 0; k < p; k++) {
      if (!running[k]) continue;
      busy[k] += step;
      rem[k] -= step * speed[k];
      if (rem[k] > 1e-12 * (work[k] + 1)) continue;
      if (k + 1 < p) { /* microbatch next[k] leaves for stage k + 1 */
        double leave = now > link_free[k + 1] ? now : link_free[k + 1], w = wire ? wire[k + 1] : 0;
        link_free[k + 1] = leave + w;
        arr[(size_t)(k + 1) * m + next[k]] = leave + w + (latency ? latency[k + 1] : 0) + hop_ms;
      } else if (next[k] == m - 1 && wire) /* the gather back is a later pipeline segment (drain): every
                                              microbatch leaves once the last stage finished them all */
        tail_end = now + m * wire[p] + latency[p];
      next[k]++;
      if (ARRIVAL(k) <= now) { /* keeps its cores: its next microbatch is here */
        rem[k] = work[k] > 0 ? work[k] : 0;
      } else {
        running[k] = false;
        free_cores += n[k] < cores ? n[k] : cores;
        if (on_cores) taken &= ~on_cores[k];
      }
    }
  }
#undef ARRIVAL
  free(arr);
  free(link_free);
  free(rem);
  free(since);
  free(speed);
  free(next);
  free(running);
  return now > tail_end ? now : tail_end;
}

static const int *device_hosts(const ppcc_predict_options *o) { return o ? o->device_host : NULL; }

static bool add_link_move(const ppcc_graph *g, const ppcc_predict_options *o, ppcc_prediction *p, int j, int a, int b,
                          int64_t bytes, double *wire, double *latency) {
  const ppcc_devices_spec *spec = g->partition.devices_spec;
  if (a == b || a < 0 || b < 0 || a >= g->n_devices || b >= g->n_devices) return true;
  int ha = ppcc_devices_spec_host(spec, device_hosts(o), a), hb = ppcc_devices_spec_host(spec, device_hosts(o), b);
  const ppcc_link_spec *l = ppcc_devices_spec_link(spec, ha, hb);
  if (!l) return true;
  ppcc_transfer_prediction *t = realloc(p->transfers, sizeof *t * (size_t)(p->n_transfers + 1));
  if (!t) return false;
  p->transfers = t;
  double on_wire = 1e3 * (double)bytes / l->bytes_per_s, lat = 1e3 * l->latency_s;
  t[p->n_transfers++] =
      (ppcc_transfer_prediction){j, g->values[g->ops[j].out[0]].name, a, b, ha, hb, bytes, on_wire + lat};
  *wire += on_wire;
  if (lat > *latency) *latency = lat;
  return true;
}

/* Op j's moves over links (devices spec "links"), each recorded in
 * p->transfers: a transfer's shards paired as rep_transfer_bytes pairs
 * them; a collective's operand shards to every result device on another
 * host (an unshard gathering to one device, an all-reduce across hosts).
 * Their time on the wire adds to *wire, the largest latency to *latency
 * (per microbatch; per_mb: the value's bytes divide among M microbatches).
 * False when out of memory. */
static bool link_costs(const ppcc_graph *g, const ppcc_predict_options *o, ppcc_prediction *p, int j, int per_mb,
                       double *wire, double *latency) {
  const ppcc_devices_spec *spec = g->partition.devices_spec;
  const ppcc_op *op = &g->ops[j];
  if (!spec || !spec->n_links || op->n_in < 1 || op->n_out < 1) return true;
  const ppcc_value *from = &g->values[op->in[0]], *to = &g->values[op->out[0]];
  int64_t bytes = rep_shard_bytes(from) / per_mb;
  if (rep_is_transfer(op)) {
    bool replicates = shard_count(from) == 1 && shard_count(to) > 1;
    int n = replicates || shard_count(from) > shard_count(to) ? shard_count(to) : shard_count(from);
    for (int i = 0; i < n; i++)
      if (!add_link_move(g, o, p, j, rep_shard_device(from, replicates ? 0 : i), rep_shard_device(to, i), bytes, wire,
                         latency))
        return false;
    return true;
  }
  bool one_copy = from->layout.kind == PPCC_LAYOUT_REPLICATED; /* any one shard will do */
  for (int r = 0; r < shard_count(to); r++) {
    int dst = rep_shard_device(to, r), near = 0;
    bool seen = false; /* each result device once */
    for (int q = 0; q < r; q++) seen = seen || rep_shard_device(to, q) == dst;
    for (int i = 0; one_copy && i < shard_count(from); i++) /* the copy on the result's host, if any */
      if (ppcc_devices_spec_host(spec, device_hosts(o), rep_shard_device(from, i)) ==
          ppcc_devices_spec_host(spec, device_hosts(o), dst))
        near = i;
    for (int i = one_copy ? near : 0; !seen && i < (one_copy ? near + 1 : shard_count(from)); i++)
      if (!add_link_move(g, o, p, j, rep_shard_device(from, i), dst, bytes, wire, latency)) return false;
  }
  return true;
}

/* Outputs whose shards live on another host than device 0's go to it
 * after the run (each rank forwards them to rank 0, all microbatches). */
static double outputs_link_ms(const ppcc_graph *g, const ppcc_predict_options *o) {
  const ppcc_devices_spec *spec = g->partition.devices_spec;
  double ms = 0;
  for (int k = 0; spec && spec->n_links && k < g->n_outputs; k++) {
    bool repeated = false;
    for (int i = 0; i < k; i++) repeated = repeated || g->outputs[i] == g->outputs[k];
    const ppcc_value *v = &g->values[g->outputs[k]];
    for (int i = 0; !repeated && i < shard_count(v); i++) {
      int dev = rep_shard_device(v, i);
      if (dev <= 0 || dev >= g->n_devices) continue;
      const ppcc_link_spec *l = ppcc_devices_spec_link(spec, ppcc_devices_spec_host(spec, device_hosts(o), dev),
                                                       ppcc_devices_spec_host(spec, device_hosts(o), 0));
      /* every microbatch's slice: the whole value's bytes */
      if (l) ms += 1e3 * ((double)rep_shard_bytes(v) / l->bytes_per_s + l->latency_s);
    }
  }
  return ms;
}

static bool predict_time(const ppcc_graph *g, const ppcc_predict_options *o, const ppcc_calibration *c,
                         ppcc_prediction *p, const rep_stages *st) {
  int m = p->microbatches, nd = g->n_devices, ns = p->n_stages;
  size_t cells = (size_t)ns * (size_t)(nd > 0 ? nd : 1) + 1;
  bool *carries = calloc((size_t)g->n_values + 1, sizeof *carries);
  double *dev_ms = calloc(cells, sizeof *dev_ms), *dev_fl = calloc(cells, sizeof *dev_fl);
  double *dev_by = calloc(cells, sizeof *dev_by), *work = calloc((size_t)ns + 1, sizeof *work);
  double *busy = calloc((size_t)ns + 1, sizeof *busy);
  double *overlap = calloc((size_t)ns + 1, sizeof *overlap);
  double *dev_overlap = calloc(cells, sizeof *dev_overlap);
  int *group = calloc((size_t)ns + 1, sizeof *group);
  /* per stage k: the link into it from stage k - 1 (wire and latency, one
   * microbatch); [ns]: out of the last stage (a gather back) */
  double *wire = calloc((size_t)ns + 1, sizeof *wire), *latency = calloc((size_t)ns + 1, sizeof *latency);
  int *producer = malloc(sizeof(int) * ((size_t)g->n_values + 1));
  bool ok = carries && dev_ms && dev_fl && dev_by && work && busy && group && overlap &&
            dev_overlap && wire && latency && producer;
  for (int v = 0; ok && v < g->n_values; v++) producer[v] = -1;
  for (int j = 0; ok && j < g->n_ops; j++)
    for (int r = 0; r < g->ops[j].n_out; r++) producer[g->ops[j].out[r]] = j;
  /* uncalibrated and no thread count: a core per device (no sharing) */
  int cores = o && o->threads > 0 ? o->threads : c->calibrated ? c->cores : nd > 0 ? nd : 1;
  int concurrent = rep_concurrent_devices(g, st, m);
  int threads = ppcc_kernel_threads_per_device(cores, concurrent); /* the runtime's share */
  bool jit = o && o->jit;
  /* the weights' share beyond the caches of the cores the run uses */
  int busy_cores = nd * threads < cores ? nd * threads : cores;
  double cold = ppcc_predict_cold_share(ppcc_predict_param_bytes(g), c->cache_bytes * busy_cores);
  /* per-op costs: the interpreter's (op_costs) or the JIT's (jit_op_costs) */
  bool use_costs = jit ? c->n_jit_op_costs > 0 : true;
  /* per device: it waited (program start, a transfer or collective it
   * takes part in) and no op since read weights, so the next one that
   * does (the interpreter: weights it has not read yet, params_read_before)
   * pays resume_us (interpreter: with M > 1 once per segment and
   * microbatch, ppcc_pipeline_segments; counted per segment start, as
   * below) */
  bool *waited = calloc((size_t)(nd > 0 ? nd : 1), sizeof *waited);
  /* per device: its kernel threads parked since its last split kernel
   * (ppcc_predict_op_splits): at every wait, and at the start of a forward
   * of several devices (rt_finish_gate_wait parks them); its next split
   * kernel pays pool_wake_us (both backends: the JIT calls the same kernels).
   * Devices that compute one at a time with several threads share one
   * pool that no wait parks (ppcc_lone_device, rt_pool_share): no wakes */
  bool *parked = calloc((size_t)(nd > 0 ? nd : 1), sizeof *parked);
  double wake_ms = threads > 1 && !ppcc_lone_device(threads, concurrent) && use_costs ? c->pool_wake_us * 1e-3 : 0;
  /* per device: no compute op yet and no wait before it (start_us) */
  bool *fresh = calloc((size_t)(nd > 0 ? nd : 1), sizeof *fresh);
  /* per value: the shards of a param read since the segment began (params_read_before) */
  uint64_t *read = calloc((size_t)g->n_values + 1, sizeof *read);
  /* the fixed costs around waits as the runtime places the device threads
   * (rt_run_thread_budget): spread over the cores, a woken device runs on
   * a core that idled; else they share one. Format 4 on: start_us whatever
   * the devices, the JIT's resume too; before: start_us only with more
   * devices than cores, the JIT no resume. Format 5, spread: the start
   * grows with the other device threads on the device's core (device d on
   * core d mod cores), each woken as the forward starts: the own-core
   * start with none, the spread one (its calibration's 4 devices on 2
   * cores) with one, and as much more per further one. Measured (interp,
   * 2 cores, per op over 100 forwards): a forward's first op 0.2-0.4 us
   * beyond its fitted cost and resume with no other device thread on its
   * core, 0.9-1.3 with one, 2.7 with three (ppffn_sharktank). Format 6
   * measures three (start_wide_us: 1.3-1.55 us in 6 calibrations, where
   * the line through none and one gave 0.4-1.4) and the resume there: a
   * line through the measured points, the last segment's beyond them */
  bool spread = ppcc_devices_spread(cores, threads, nd), v4 = c->version >= 4, v5 = c->version >= 5,
       v6 = c->version >= 6, v7 = c->version >= 7;
  double start_ms = !use_costs || (!v4 && nd <= cores) ? 0
                    : (jit ? (v4 && spread ? c->jit_start_spread_us : c->jit_start_us)
                           : (v4 && spread ? c->start_spread_us : c->start_us)) * 1e-3;
  double own_core_ms = (jit ? c->jit_start_own_core_us : c->start_own_core_us) * 1e-3;
  double resume_ms = !use_costs ? 0
                     : (jit ? (!v4 ? 0 : spread ? c->jit_resume_spread_us : c->jit_resume_us)
                            : (v4 && spread ? c->resume_spread_us : c->resume_us)) * 1e-3;
  double wide_start_ms = (jit ? c->jit_start_wide_us : c->start_wide_us) * 1e-3;
  double wide_resume_ms = (jit ? c->jit_resume_wide_us : c->resume_wide_us) * 1e-3;
  double *dev_start_ms = calloc((size_t)(nd > 0 ? nd : 1), sizeof *dev_start_ms);
  double *dev_resume_ms = calloc((size_t)(nd > 0 ? nd : 1), sizeof *dev_resume_ms);
  for (int dev = 0; dev_start_ms && dev_resume_ms && dev < nd; dev++) {
    int others = spread && v5 && cores > 0 ? (nd - 1 - dev % cores) / cores : -1; /* on dev's core */
    double ms = others < 0 ? start_ms : own_core_ms + others * (start_ms - own_core_ms), resume = resume_ms;
    if (others > 1 && v6 && (wide_start_ms != 0 || wide_resume_ms != 0)) { /* beyond one other: toward the measured three */
      ms = start_ms + (others - 1) * (wide_start_ms - start_ms) / 2;
      resume = resume_ms + (others - 1) * (wide_resume_ms - resume_ms) / 2;
    }
    dev_start_ms[dev] = use_costs && (ms > 0 || (v7 && !jit && spread)) ? ms : 0; /* format 7: the interpreter's may be below 0 */
    dev_resume_ms[dev] = use_costs ? resume : 0;
  }
  int *seg_begin = malloc(sizeof(int) * ((size_t)g->n_ops + 2));
  /* per device: the compute since it last waited (one microbatch), its
   * cell, and whether a collective or transfer released it: then the
   * devices of its stage start it a hand-over apart, and only the part
   * beyond one hand-over can run at the same time as theirs (tiny TP
   * steps mostly take turns) */
  run_piece *piece = calloc((size_t)(nd > 0 ? nd : 1), sizeof *piece);
  ok = ok && waited && parked && fresh && dev_start_ms && dev_resume_ms && read && seg_begin && piece;
  double hop_ms = c->hop_us * 1e-3;
  int n_seg = 1, seg = 0;
  if (ok) seg_begin[0] = 0, seg_begin[1] = g->n_ops;
  if (ok && m > 1) n_seg = ppcc_pipeline_segments(g, seg_begin);
  for (int dev = 0; ok && dev < nd; dev++) waited[dev] = fresh[dev] = true, parked[dev] = nd > 1;
  for (int v = 0; ok && v < g->n_values; v++) carries[v] = g->values[v].kind == PPCC_VALUE_INPUT;
  for (int j = 0; ok && j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    bool cj = false;
    for (int k = 0; k < op->n_in; k++) cj = cj || carries[op->in[k]];
    for (int r = 0; r < op->n_out; r++) carries[op->out[r]] = cj;
    while (seg + 1 < n_seg && j >= seg_begin[seg + 1]) { /* a new segment: every device starts it after a wait */
      seg++;
      for (int dev = 0; dev < nd; dev++) {
        close_piece(&piece[dev], dev_overlap, hop_ms);
        waited[dev] = parked[dev] = true;
      }
      memset(read, 0, sizeof *read * (size_t)g->n_values);
    }
    if (op->info && op->info->family != PPCC_FAMILY_COMPUTE) {
      /* over a link: the hand-over into its stage from the one before, or
       * (a gather back to an earlier stage's device) the tail after the last */
      int k = st->op_stage[j], from = op->n_in > 0 ? producer[op->in[0]] : -1;
      int at = k > 0 && from >= 0 && st->op_stage[from] == k - 1 ? k : ns;
      if (!link_costs(g, o, p, j, cj ? m : 1, &wire[at], &latency[at])) ok = false;
    }
    if (rep_is_transfer(op)) { /* a send does not block; the receivers wait */
      const ppcc_value *r = &g->values[op->out[0]];
      for (int i = 0; i < shard_count(r); i++)
        if (rep_shard_device(r, i) >= 0 && rep_shard_device(r, i) < nd) {
          close_piece(&piece[rep_shard_device(r, i)], dev_overlap, hop_ms);
          piece[rep_shard_device(r, i)].staggered = true;
          waited[rep_shard_device(r, i)] = parked[rep_shard_device(r, i)] = true;
          fresh[rep_shard_device(r, i)] = false;
        }
    } else if (op->info && op->info->family != PPCC_FAMILY_COMPUTE) {
      for (int dev = 0; dev < nd; dev++)
        if (ppcc_op_involves(g, op, dev)) {
          close_piece(&piece[dev], dev_overlap, hop_ms);
          piece[dev].staggered = true;
          waited[dev] = parked[dev] = true;
          fresh[dev] = false;
        }
    }
    const ppcc_op_cost *move = jit && use_costs && op->info && op->info->family != PPCC_FAMILY_COMPUTE && op->n_out > 0
                                   ? ppcc_calibration_jit_op_cost(c, op->info->name) : NULL;
    if (move) { /* the JIT's own work around the communication: busy time on each result device */
      double bytes = ppcc_predict_move_bytes(g, op), t = ppcc_op_cost_us(move, 0, bytes, 0, 0) * 1e-3;
      const ppcc_value *r = &g->values[op->out[0]];
      for (int i = 0; i < shard_count(r); i++) {
        int dev = rep_shard_device(r, i);
        bool seen = false;
        for (int q = 0; q < i; q++) seen = seen || rep_shard_device(r, q) == dev;
        if (seen || dev < 0 || dev >= nd) continue;
        size_t at = (size_t)st->op_stage[j] * (size_t)nd + (size_t)dev;
        dev_ms[at] += t * m / device_speed(g, o, dev);
        dev_by[at] += bytes * m;
      }
    }
    if (!op->info || op->info->family != PPCC_FAMILY_COMPUTE || op->n_out < 1) continue;
    int n_group = st->n_dev[st->op_stage[j]] > 0 ? st->n_dev[st->op_stage[j]] : 1;
    int streams = n_group < cores ? n_group : cores;
    double fl, by, t = op_ms(g, op, carries, m, c, threads, streams, cold, use_costs, jit, &fl, &by);
    bool splits = wake_ms > 0 && ppcc_predict_op_splits(g, op, threads);
    bool weights = reads_weights(g, op);
    const ppcc_value *r = &g->values[op->out[0]];
    for (int i = 0; i < shard_count(r); i++) {
      int dev = rep_shard_device(r, i);
      if (dev < 0 || dev >= nd) continue;
      size_t at = (size_t)st->op_stage[j] * (size_t)nd + (size_t)dev;
      /* a residual: may take back what the op's cost overstates, never more than all of it */
      /* the JIT's resume also holds its device function's own work after
       * the wait, paid whatever the op reads: by the op reading weights */
      bool cold_weights = weights && (jit || !params_read_before(g, op, read, dev));
      note_weights_read(g, op, read, dev);
      double resume = !waited[dev] || !cold_weights ? 0 : dev_resume_ms[dev] > -t ? dev_resume_ms[dev] : -t;
      if (cold_weights) waited[dev] = false;
      if (splits && parked[dev]) resume += wake_ms;
      if (splits) parked[dev] = false;
      double start = fresh[dev] ? dev_start_ms[dev] : 0; /* once per forward */
      if (start < -(t + resume) * m) start = -(t + resume) * m; /* a residual takes back no more than the op's time */
      fresh[dev] = false;
      dev_ms[at] += ((t + resume) * m + start) / device_speed(g, o, dev);
      if (piece[dev].ms > 0 && piece[dev].cell != at) close_piece(&piece[dev], dev_overlap, hop_ms);
      piece[dev].cell = at;
      piece[dev].ms += (t + resume) / device_speed(g, o, dev);
      dev_fl[at] += fl * m;
      dev_by[at] += by * m;
    }
  }
  for (int dev = 0; ok && dev < nd; dev++) close_piece(&piece[dev], dev_overlap, hop_ms);
  for (int k = 0; ok && k < ns; k++) {
    ppcc_stage_prediction *sp = &p->stages[k];
    sp->n_devices = st->n_dev[k] < PPCC_MAX_DEVICES ? st->n_dev[k] : PPCC_MAX_DEVICES;
    memcpy(sp->devices, rep_stage_devices(st, k), sizeof(int) * (size_t)sp->n_devices);
    group[k] = st->n_dev[k] > 0 ? st->n_dev[k] : 1;
    for (int dev = 0; dev < nd; dev++) {
      size_t at = (size_t)k * (size_t)nd + (size_t)dev;
      if (dev_ms[at] > work[k] * m) {
        work[k] = dev_ms[at] / m;
        overlap[k] = dev_ms[at] > 0 ? dev_overlap[at] * m / dev_ms[at] : 1;
        sp->flops = dev_fl[at];
        sp->bytes = dev_by[at];
      }
    }
  }
  /* as the runtime places them (ppcc_devices_spread): device d on core
   * d mod cores, so a stage waits for its own cores */
  uint64_t *on_cores = NULL;
  if (ok && ppcc_devices_spread(cores, threads, nd) && cores <= 64 && (on_cores = calloc((size_t)ns + 1, sizeof *on_cores)))
    for (int k = 0; k < ns; k++)
      for (int i = 0; i < st->n_dev[k]; i++) on_cores[k] |= (uint64_t)1 << (rep_stage_devices(st, k)[i] % cores);
  double wall = ok ? simulate_pipeline(ns, m, group, on_cores, work, overlap, cores, c->hop_us * 1e-3,
                                     jit && c->n_jit_slowdown > 0 ? c->jit_concurrent_slowdown : c->concurrent_slowdown,
                                     !use_costs ? 0 : jit && c->n_jit_slowdown > 0 ? c->n_jit_slowdown : c->n_slowdown, wire,
                                     latency, busy) : -1;
  free(on_cores);
  ok = ok && wall >= 0;
  double sum = 0;
  for (int k = 0; ok && k < ns; k++) {
    p->stages[k].time_ms = busy[k];
    sum += busy[k];
    /* each device's share of its stage's busy time: its CPU time, stretched as the stage's */
    double stretch = work[k] > 0 ? busy[k] / (work[k] * m) : 1.0;
    for (int dev = 0; dev < nd; dev++) p->devices[dev].compute_ms += dev_ms[(size_t)k * (size_t)nd + (size_t)dev] * stretch;
  }
  if (ok) {
    p->outputs_ms = outputs_link_ms(g, o);
    p->wall_ms = wall + p->outputs_ms;
    p->bubble = wall > 0 && ns > 0 ? 1 - sum / (ns * wall) : 0;
    if (p->n_transfers || p->outputs_ms > 0) {
      p->unoverlapped_ms = p->outputs_ms;
      for (int k = 0; k <= ns; k++) p->unoverlapped_ms += (work[k] + wire[k] + latency[k]) * m;
    }
  }
  free(wire);
  free(latency);
  free(producer);
  free(waited);
  free(parked);
  free(fresh);
  free(dev_start_ms);
  free(dev_resume_ms);
  free(read);
  free(seg_begin);
  free(carries);
  free(dev_ms);
  free(dev_fl);
  free(dev_by);
  free(work);
  free(busy);
  free(dev_overlap);
  free(overlap);
  free(piece);
  free(group);
  return ok;
}

/* ---------------- entry points ---------------- */

ppcc_status ppcc_predict(const ppcc_graph *g, const ppcc_predict_options *o, ppcc_prediction *p, ppcc_diag *d) {
  memset(p, 0, sizeof *p);
  int m = o && o->microbatches > 1 ? o->microbatches : 1;
  for (int v = 0; v < g->n_values && m > 1; v++) {
    const ppcc_value *x = &g->values[v];
    if (x->kind == PPCC_VALUE_INPUT && (x->rank < 1 || x->shape[0] % m != 0))
      return ppcc_error(d, "--microbatches %d: input '%s': its batch dim (dim 0) does not divide into %d microbatches",
                        m, x->name, m);
  }
  ppcc_calibration defaults;
  ppcc_calibration_defaults(&defaults);
  const ppcc_calibration *c = o && o->calib ? o->calib : &defaults;
  rep_stages st;
  if (!rep_stages_build(g, &st)) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory predicting the plan");
  p->n_devices = g->n_devices;
  p->n_stages = st.n_stages;
  p->microbatches = m;
  p->calibrated = c->calibrated;
  p->devices = calloc((size_t)(g->n_devices > 0 ? g->n_devices : 1), sizeof *p->devices);
  p->stages = calloc((size_t)(st.n_stages > 0 ? st.n_stages : 1), sizeof *p->stages);
  p->op_stage = malloc(sizeof(int) * (size_t)(g->n_ops > 0 ? g->n_ops : 1));
  ppcc_device_summary *rows = ppcc_device_summaries(g);
  bool ok = p->devices && p->stages && p->op_stage && rows;
  if (ok) {
    memcpy(p->op_stage, st.op_stage, sizeof(int) * (size_t)g->n_ops);
    for (int dev = 0; dev < g->n_devices; dev++) {
      p->devices[dev].device = dev;
      p->devices[dev].flops = rows[dev].flops;
    }
    ok = simulate_memory(g, m, o ? o->view_ops : NULL, o && o->jit, p->devices) && predict_time(g, o, c, p, &st);
  }
  free(rows);
  rep_stages_free(&st);
  if (!ok) {
    ppcc_prediction_free(p);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory predicting the plan");
  }
  return PPCC_OK;
}

void ppcc_prediction_free(ppcc_prediction *p) {
  free(p->transfers);
  free(p->devices);
  free(p->stages);
  free(p->op_stage);
  memset(p, 0, sizeof *p);
}

/* ---------------- report sections ---------------- */

static void devices_text(const int *v, int n, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = 0;
  for (int i = 0; i < n && off < len; i++) off += (size_t)snprintf(buf + off, len - off, i ? ",%d" : "[%d", v[i]);
  if (off < len) snprintf(buf + off, len - off, n ? "]" : "[]");
}

void ppcc_prediction_write_text(const ppcc_prediction *p, FILE *out) {
  char a[32], b[32], c[32], e[32], f[32];
  fprintf(out, "\nprediction (%d microbatch%s, %s):\n", p->microbatches, p->microbatches == 1 ? "" : "es",
          p->calibrated ? "calibrated" : "uncalibrated: default speeds, see ppcc calibrate");
  fputs("  peak = params + activations (of the microbatches in flight) + kv cache + transfer buffers\n", out);
  fprintf(out, "  %6s  %11s  %10s  %11s  %9s  %10s  %12s  %12s\n", "device", "peak memory", "params", "activations",
          "in flight", "kv cache", "transfer buf", "compute (ms)");
  for (int i = 0; i < p->n_devices; i++) {
    const ppcc_device_prediction *r = &p->devices[i];
    rep_human_bytes(r->peak_bytes, a, sizeof a);
    rep_human_bytes(r->param_bytes, b, sizeof b);
    rep_human_bytes(r->activation_bytes, c, sizeof c);
    rep_human_bytes(r->kv_cache_bytes, e, sizeof e);
    rep_human_bytes(r->transfer_bytes, f, sizeof f);
    fprintf(out, "  %6d  %11s  %10s  %11s  %9d  %10s  %12s  %12.4f\n", r->device, a, b, c, r->microbatches_in_flight, e,
            f, r->compute_ms);
  }
  fprintf(out, "  %5s  %-7s  %12s  %12s  %10s\n", "stage", "devices", "flops", "bytes", "time (ms)");
  for (int k = 0; k < p->n_stages; k++) {
    const ppcc_stage_prediction *s = &p->stages[k];
    char devs[96];
    devices_text(s->devices, s->n_devices, devs, sizeof devs);
    fprintf(out, "  %5d  %-7s  %12.6g  %12.6g  %10.4f\n", k, devs, s->flops, s->bytes, s->time_ms);
  }
  fprintf(out, "  bubble: predicted %.3f over %d stage%s (pipeline wall %.4f ms)\n", p->bubble, p->n_stages,
          p->n_stages == 1 ? "" : "s", p->wall_ms);
  if (!p->n_transfers && p->outputs_ms <= 0) return;
  fputs("  transfers over links (devices spec), per microbatch:\n", out);
  fprintf(out, "  %6s  %-24s  %11s  %11s  %12s  %10s\n", "op", "value", "from (host)", "to (host)", "bytes", "time (ms)");
  for (int i = 0; i < p->n_transfers; i++) {
    const ppcc_transfer_prediction *t = &p->transfers[i];
    char from[32], to[32];
    snprintf(from, sizeof from, "%d (%d)", t->from_device, t->from_host);
    snprintf(to, sizeof to, "%d (%d)", t->to_device, t->to_host);
    fprintf(out, "  %6d  %-24.24s  %11s  %11s  %12" PRId64 "  %10.4f\n", t->op, t->value, from, to, t->bytes, t->ms);
  }
  fprintf(out, "  outputs to device 0's host after the run: %.4f ms\n", p->outputs_ms);
  fprintf(out, "  pipeline wall %.4f ms with links; unoverlapped (every stage and transfer in turn) %.4f ms\n",
          p->wall_ms, p->unoverlapped_ms);
}

static void json_num(FILE *out, double x) {
  if (!isfinite(x)) fputs("null", out);
  else fprintf(out, "%.6g", x);
}

void ppcc_prediction_write_json(const ppcc_prediction *p, FILE *out) {
  fprintf(out, "  \"prediction\": {\"microbatches\": %d, \"calibrated\": %s, \"bubble\": ", p->microbatches,
          p->calibrated ? "true" : "false");
  json_num(out, p->bubble);
  fputs(", \"wall_ms\": ", out);
  json_num(out, p->wall_ms);
  fputs(",\n    \"devices\": [", out);
  for (int i = 0; i < p->n_devices; i++) {
    const ppcc_device_prediction *r = &p->devices[i];
    fprintf(out,
            "%s{\"device\": %d, \"peak_bytes\": %" PRId64 ", \"param_bytes\": %" PRId64 ", \"activation_bytes\": %" PRId64
            ", \"microbatches_in_flight\": %d, \"kv_cache_bytes\": %" PRId64 ", \"transfer_bytes\": %" PRId64
            ", \"compute_ms\": ",
            i ? ",\n      " : "\n      ", r->device, r->peak_bytes, r->param_bytes, r->activation_bytes,
            r->microbatches_in_flight, r->kv_cache_bytes, r->transfer_bytes);
    json_num(out, r->compute_ms);
    putc('}', out);
  }
  fputs(p->n_devices ? "\n    ],\n    \"stages\": [" : "],\n    \"stages\": [", out);
  for (int k = 0; k < p->n_stages; k++) {
    const ppcc_stage_prediction *s = &p->stages[k];
    fprintf(out, "%s{\"stage\": %d, \"devices\": [", k ? ",\n      " : "\n      ", k);
    for (int i = 0; i < s->n_devices; i++) fprintf(out, i ? ", %d" : "%d", s->devices[i]);
    fputs("], \"flops\": ", out);
    json_num(out, s->flops);
    fputs(", \"bytes\": ", out);
    json_num(out, s->bytes);
    fputs(", \"time_ms\": ", out);
    json_num(out, s->time_ms);
    putc('}', out);
  }
  fputs(p->n_stages ? "\n    ]" : "]", out);
  if (p->n_transfers || p->outputs_ms > 0) {
    fputs(",\n    \"transfers\": [", out);
    for (int i = 0; i < p->n_transfers; i++) {
      const ppcc_transfer_prediction *t = &p->transfers[i];
      fprintf(out, "%s{\"op\": %d, \"from_device\": %d, \"to_device\": %d, \"from_host\": %d, \"to_host\": %d, "
                   "\"bytes\": %" PRId64 ", \"ms\": ",
              i ? ",\n      " : "\n      ", t->op, t->from_device, t->to_device, t->from_host, t->to_host, t->bytes);
      json_num(out, t->ms);
      putc('}', out);
    }
    fputs(p->n_transfers ? "\n    ], \"outputs_ms\": " : "], \"outputs_ms\": ", out);
    json_num(out, p->outputs_ms);
    fputs(", \"unoverlapped_ms\": ", out);
    json_num(out, p->unoverlapped_ms);
  }
  fputs("}\n", out);
}

/* ---------------- predicted vs measured ---------------- */

static double rel_error(double predicted, double measured) {
  if (measured == 0) return predicted == 0 ? 0 : INFINITY;
  return fabs(predicted - measured) / fabs(measured);
}

ppcc_status ppcc_plan_check(const ppcc_prediction *p, const ppcc_plan_measure *m, double mem_tol, double time_tol,
                            FILE *out, ppcc_diag *d) {
  if (!m->filled) return ppcc_error(d, "--check-plan: the run recorded no measurement");
  int bad_dev = -1, bad_stage = -1;
  double bad_dev_err = 0, bad_stage_err = 0;
  bool times = time_tol >= 0;
  char time_rule[160];
  if (times) snprintf(time_rule, sizeof time_rule, "stage time tolerance %.3g", time_tol);
  else
    snprintf(time_rule, sizeof time_rule,
             "stage times UNCHECKED (uncalibrated: 'ppcc calibrate -o FILE', then --calibration FILE)");
  fprintf(out, "plan check (%d microbatch%s, %s, %d forward%s measured): memory tolerance %.3g, %s\n",
          p->microbatches, p->microbatches == 1 ? "" : "es", p->calibrated ? "calibrated" : "uncalibrated", m->forwards,
          m->forwards == 1 ? "" : "s", mem_tol, time_rule);
  fputs("  device  predicted peak (B)  measured peak (B)  error\n", out);
  for (int i = 0; i < p->n_devices; i++) {
    double e = rel_error((double)p->devices[i].peak_bytes, (double)m->peak_bytes[i]);
    fprintf(out, "  %6d  %18" PRId64 "  %17" PRId64 "  %+.2f%%%s\n", i, p->devices[i].peak_bytes, m->peak_bytes[i],
            m->peak_bytes[i] ? 100.0 * ((double)p->devices[i].peak_bytes - (double)m->peak_bytes[i]) / (double)m->peak_bytes[i] : 0.0,
            e > mem_tol ? "  OFF" : "");
    if (e > mem_tol && bad_dev < 0) bad_dev = i, bad_dev_err = e;
  }
  bool range = m->stage_busy_lo && m->stage_busy_hi && m->forwards > 1;
  fprintf(out, "  stage  devices  predicted (ms)  measured busy (ms)  error%s\n",
          range ? "   fastest-slowest forward (ms)" : "");
  double sum_meas = 0;
  for (int k = 0; k < p->n_stages; k++) {
    double meas = 0, lo = 0, hi = 0; /* the slowest device's */
    for (int i = 0; i < p->n_devices; i++) {
      size_t at = (size_t)k * (size_t)p->n_devices + (size_t)i;
      if (m->stage_busy_ms[at] > meas)
        meas = m->stage_busy_ms[at], lo = range ? m->stage_busy_lo[at] : 0, hi = range ? m->stage_busy_hi[at] : 0;
    }
    sum_meas += meas;
    double e = rel_error(p->stages[k].time_ms, meas);
    char devs[96], spread[64] = "";
    devices_text(p->stages[k].devices, p->stages[k].n_devices, devs, sizeof devs);
    if (range) snprintf(spread, sizeof spread, "  %.4f-%.4f", lo, hi);
    fprintf(out, "  %5d  %-7s  %14.4f  %18.4f  %+.1f%%%s%s\n", k, devs, p->stages[k].time_ms, meas,
            meas > 0 ? 100.0 * (p->stages[k].time_ms - meas) / meas : 0.0, spread, times && e > time_tol ? "  OFF" : "");
    if (times && e > time_tol && bad_stage < 0) bad_stage = k, bad_stage_err = e;
  }
  double bubble = m->wall_ms > 0 && p->n_stages > 0 ? 1 - sum_meas / (p->n_stages * m->wall_ms) : 0;
  fprintf(out, "  bubble: predicted %.3f, measured %.3f (1 - sum of stage busy / (stages x wall), wall %.4f ms)\n",
          p->bubble, bubble, m->wall_ms);
  if (bad_dev >= 0)
    return ppcc_error(d, "--check-plan: device %d peak memory is off by %.1f%% (predicted %" PRId64
                         " B, measured %" PRId64 " B; tolerance %.1f%%)",
                      bad_dev, 100 * bad_dev_err, p->devices[bad_dev].peak_bytes, m->peak_bytes[bad_dev],
                      100 * mem_tol);
  if (bad_stage >= 0)
    return ppcc_error(d, "--check-plan: stage %d time is off by %.1f%% (predicted %.4f ms; tolerance %.1f%%)",
                      bad_stage, 100 * bad_stage_err, p->stages[bad_stage].time_ms, 100 * time_tol);
  return PPCC_OK;
}
