/* Shared pieces of the reports: shard sizes, transfer bytes, FLOP shares,
 * first consumers and the grouping of ops into stages. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"
#include "plan.h"

int rep_shard_device(const ppcc_value *v, int shard) {
  return v->devices ? v->devices[shard] : shard;
}

int64_t rep_shard_bytes(const ppcc_value *v) {
  int64_t b = ppcc_value_shard_bytes(v);
  return b < 0 ? 0 : b;
}

static int shard_count(const ppcc_value *v) {
  return v->layout.count > 0 ? v->layout.count : 1;
}

bool rep_is_transfer(const ppcc_op *op) {
  return op->info && op->info->family == PPCC_FAMILY_TRANSFER && op->n_in >= 1 && op->n_out >= 1;
}

int64_t rep_transfer_bytes(const ppcc_graph *g, const ppcc_op *op) {
  const ppcc_value *from = &g->values[op->in[0]];
  const ppcc_value *to = &g->values[op->out[0]];
  /* P8: a whole value sent to n devices is copied to each of them */
  bool replicates = shard_count(from) == 1 && shard_count(to) > 1;
  int n = replicates || shard_count(from) > shard_count(to) ? shard_count(to) : shard_count(from);
  int64_t bytes = 0;
  for (int i = 0; i < n; i++)
    if (rep_shard_device(from, replicates ? 0 : i) != rep_shard_device(to, i)) bytes += rep_shard_bytes(from);
  return bytes;
}

double rep_op_flops_per_shard(const ppcc_graph *g, const ppcc_op *op) {
  if (!op->info || !op->info->flops || op->n_out < 1) return 0;
  double total = op->info->flops(g, op);
  const ppcc_layout l = g->values[op->out[0]].layout;
  bool divided = l.kind == PPCC_LAYOUT_SPLIT || l.kind == PPCC_LAYOUT_UNREDUCED;
  return divided && l.count > 0 ? total / l.count : total;
}

double rep_op_flops_on_devices(const ppcc_graph *g, const ppcc_op *op) {
  if (op->n_out < 1) return 0;
  return rep_op_flops_per_shard(g, op) * shard_count(&g->values[op->out[0]]);
}

int *rep_first_consumers(const ppcc_graph *g) {
  int *first = malloc(sizeof(int) * (size_t)(g->n_values > 0 ? g->n_values : 1));
  if (!first) return NULL;
  for (int v = 0; v < g->n_values; v++) first[v] = -1;
  for (int i = 0; i < g->n_ops; i++)
    for (int k = 0; k < g->ops[i].n_in; k++)
      if (first[g->ops[i].in[k]] < 0) first[g->ops[i].in[k]] = i;
  return first;
}

static int result_devices(const ppcc_graph *g, const ppcc_op *op, int *buf) {
  if (op->n_out < 1) return 0;
  const ppcc_value *r = &g->values[op->out[0]];
  int n = shard_count(r) < PPCC_MAX_DEVICES ? shard_count(r) : PPCC_MAX_DEVICES;
  for (int i = 0; i < n; i++) buf[i] = rep_shard_device(r, i);
  return n;
}

int rep_op_devices(const ppcc_graph *g, const ppcc_op *op, int *buf) {
  if (op->n_devices <= 0 || !op->devices) return result_devices(g, op, buf);
  int n = op->n_devices < PPCC_MAX_DEVICES ? op->n_devices : PPCC_MAX_DEVICES;
  memcpy(buf, op->devices, sizeof(int) * (size_t)n);
  return n;
}

/* Collectives and transfers belong to the stage that receives the data. */
static int group_devices(const ppcc_graph *g, const ppcc_op *op, int *buf) {
  bool moves_data = op->info && op->info->family != PPCC_FAMILY_COMPUTE;
  return moves_data ? result_devices(g, op, buf) : rep_op_devices(g, op, buf);
}

void rep_human_bytes(int64_t bytes, char *buf, size_t n) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    snprintf(buf, n, "%" PRId64 " B", bytes);
    return;
  }
  double x = (double)bytes;
  int u = 0;
  while (x >= 1024 && u < 5) {
    x /= 1024;
    u++;
  }
  snprintf(buf, n, "%.1f %s", x, units[u]);
}

/* ---- stages ---- */

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Sorts and dedups in place; returns the new length. */
static int sort_unique(int *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_int);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m == 0 || v[m - 1] != v[i]) v[m++] = v[i];
  return m;
}

static uint64_t hash_devices(const int *v, int n) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
  for (int i = 0; i < n; i++) h = (h ^ (uint32_t)v[i]) * 1099511628211ull;
  return h;
}

/* Stage lookup: open addressing over stage ids, keyed by device group. */
typedef struct stage_table {
  rep_stages *s;
  int *slots;
  size_t mask;
  int pool_len, pool_cap, cap_stages;
} stage_table;

static bool same_group(const rep_stages *s, int stage, const int *v, int n) {
  return s->n_dev[stage] == n &&
         (n == 0 || memcmp(rep_stage_devices(s, stage), v, sizeof(int) * (size_t)n) == 0);
}

static bool add_stage(stage_table *t, const int *v, int n) {
  rep_stages *s = t->s;
  if (t->pool_len + n > t->pool_cap) {
    int cap = (t->pool_cap + n) * 2;
    int *p = realloc(s->dev_pool, sizeof(int) * (size_t)cap);
    if (!p) return false;
    s->dev_pool = p;
    t->pool_cap = cap;
  }
  if (s->n_stages == t->cap_stages) {
    int cap = t->cap_stages ? t->cap_stages * 2 : 16;
    int *f = realloc(s->first_dev, sizeof(int) * (size_t)cap);
    if (!f) return false;
    s->first_dev = f;
    int *c = realloc(s->n_dev, sizeof(int) * (size_t)cap);
    if (!c) return false;
    s->n_dev = c;
    t->cap_stages = cap;
  }
  if (n > 0) memcpy(s->dev_pool + t->pool_len, v, sizeof(int) * (size_t)n);
  s->first_dev[s->n_stages] = t->pool_len;
  s->n_dev[s->n_stages] = n;
  t->pool_len += n;
  s->n_stages++;
  return true;
}

/* Both sorted and unique: is every device of v in w? */
static bool is_subset(const int *v, int n, const int *w, int m) {
  int j = 0;
  for (int i = 0; i < n; i++) {
    while (j < m && w[j] < v[i]) j++;
    if (j == m || w[j] != v[i]) return false;
  }
  return true;
}

/* A group inside an earlier stage's devices (e.g. an unshard onto one of
 * them) is part of that pipeline stage, not a stage of its own. */
static int enclosing_stage(const rep_stages *s, const int *v, int n) {
  for (int k = 0; k < s->n_stages; k++)
    if (is_subset(v, n, rep_stage_devices(s, k), s->n_dev[k])) return k;
  return -1;
}

/* Returns the stage id of the group, adding it if new; -1 on OOM. */
static int stage_of(stage_table *t, const int *v, int n) {
  size_t h = hash_devices(v, n) & t->mask;
  while (t->slots[h] >= 0) {
    if (same_group(t->s, t->slots[h], v, n)) return t->slots[h];
    h = (h + 1) & t->mask;
  }
  int enclosing = enclosing_stage(t->s, v, n);
  if (enclosing >= 0) return enclosing;
  if (!add_stage(t, v, n)) return -1;
  t->slots[h] = t->s->n_stages - 1;
  return t->slots[h];
}

/* Counting sort of ops by stage, keeping program order inside a stage. */
static bool group_ops(const ppcc_graph *g, rep_stages *s) {
  s->start = calloc((size_t)s->n_stages + 1, sizeof(int));
  s->order = malloc(sizeof(int) * (size_t)(g->n_ops > 0 ? g->n_ops : 1));
  if (!s->start || !s->order) return false;
  for (int i = 0; i < g->n_ops; i++) s->start[s->op_stage[i] + 1]++;
  for (int k = 0; k < s->n_stages; k++) s->start[k + 1] += s->start[k];
  int *fill = malloc(sizeof(int) * (size_t)(s->n_stages > 0 ? s->n_stages : 1));
  if (!fill) return false;
  memcpy(fill, s->start, sizeof(int) * (size_t)s->n_stages);
  for (int i = 0; i < g->n_ops; i++) s->order[fill[s->op_stage[i]]++] = i;
  free(fill);
  return true;
}

bool rep_stages_build(const ppcc_graph *g, rep_stages *s) {
  memset(s, 0, sizeof *s);
  size_t cap = 16;
  while (cap < (size_t)g->n_ops * 2) cap *= 2;
  stage_table t = {.s = s, .slots = malloc(sizeof(int) * cap), .mask = cap - 1};
  int *group = malloc(sizeof(int) * PPCC_MAX_DEVICES);
  s->op_stage = malloc(sizeof(int) * (size_t)(g->n_ops > 0 ? g->n_ops : 1));
  bool ok = t.slots && group && s->op_stage;
  if (ok) memset(t.slots, 0xff, sizeof(int) * cap); /* all -1 */
  for (int i = 0; ok && i < g->n_ops; i++) {
    int n = sort_unique(group, group_devices(g, &g->ops[i], group));
    s->op_stage[i] = stage_of(&t, group, n);
    ok = s->op_stage[i] >= 0;
  }
  ok = ok && group_ops(g, s);
  free(t.slots);
  free(group);
  if (!ok) rep_stages_free(s);
  return ok;
}

void rep_stages_free(rep_stages *s) {
  free(s->op_stage);
  free(s->first_dev);
  free(s->n_dev);
  free(s->dev_pool);
  free(s->order);
  free(s->start);
  memset(s, 0, sizeof *s);
}
