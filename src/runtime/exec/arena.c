/* Per-device buffer arenas: offsets planned from lifetimes, one block of
 * memory per device kept across runs.
 *
 * Planning (rt_arena_plan) simulates a best-fit allocator over the
 * device's steps in program order: at step t every buffer born at t is
 * placed in the smallest free range that holds it (or on top of the
 * arena), then every buffer whose last reader ran at t frees its range
 * (neighbouring free ranges merge). A buffer is live from its birth step
 * to its death step inclusive, so an op's result never shares bytes with
 * an operand read by the same op. The arena's size is the simulation's
 * high-water mark.
 *
 * The pool keeps each device's block after a run: the next run (--repeat,
 * the next microbatch count, the next forward in the same process) takes
 * it back when it is large enough, so its pages are touched once per
 * process, not once per run. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"

/* Every buffer takes at least one line: distinct buffers, distinct addresses. */
int64_t rt_arena_round(int64_t bytes) {
  return bytes <= 0 ? RT_ARENA_ALIGN : (bytes + RT_ARENA_ALIGN - 1) / RT_ARENA_ALIGN * RT_ARENA_ALIGN;
}

typedef struct free_range {
  int64_t off, size;
} free_range;

typedef struct free_list {
  free_range *r;
  int n, cap;
} free_list;

static bool insert_range(free_list *f, int at, free_range x) {
  if (f->n == f->cap) {
    int cap = f->cap ? f->cap * 2 : 64;
    free_range *r = realloc(f->r, sizeof *r * (size_t)cap);
    if (!r) return false;
    f->r = r, f->cap = cap;
  }
  memmove(&f->r[at + 1], &f->r[at], sizeof *f->r * (size_t)(f->n - at));
  f->r[at] = x;
  f->n++;
  return true;
}

static void remove_range(free_list *f, int at) {
  memmove(&f->r[at], &f->r[at + 1], sizeof *f->r * (size_t)(f->n - at - 1));
  f->n--;
}

/* Best fit, else the top of the arena (growing a free range that ends
 * there instead of leaving it unused). */
static int64_t place(free_list *f, int64_t size, int64_t *top) {
  int best = -1;
  for (int i = 0; i < f->n; i++)
    if (f->r[i].size >= size && (best < 0 || f->r[i].size < f->r[best].size)) best = i;
  if (best >= 0) {
    int64_t off = f->r[best].off;
    f->r[best].off += size;
    f->r[best].size -= size;
    if (f->r[best].size == 0) remove_range(f, best);
    return off;
  }
  if (f->n > 0 && f->r[f->n - 1].off + f->r[f->n - 1].size == *top) {
    int64_t off = f->r[f->n - 1].off;
    *top = off + size;
    remove_range(f, f->n - 1);
    return off;
  }
  int64_t off = *top;
  *top += size;
  return off;
}

static bool release(free_list *f, int64_t off, int64_t size) {
  int at = 0;
  while (at < f->n && f->r[at].off < off) at++;
  bool join_prev = at > 0 && f->r[at - 1].off + f->r[at - 1].size == off;
  bool join_next = at < f->n && off + size == f->r[at].off;
  if (join_prev && join_next) {
    f->r[at - 1].size += size + f->r[at].size;
    remove_range(f, at);
  } else if (join_prev) {
    f->r[at - 1].size += size;
  } else if (join_next) {
    f->r[at].off = off;
    f->r[at].size += size;
  } else {
    return insert_range(f, at, (free_range){off, size});
  }
  return true;
}

static const rt_arena_buf *sort_base;
static int by_birth(const void *a, const void *b) {
  const rt_arena_buf *x = &sort_base[*(const int *)a], *y = &sort_base[*(const int *)b];
  if (x->birth != y->birth) return x->birth < y->birth ? -1 : 1;
  return *(const int *)a < *(const int *)b ? -1 : 1;
}
static int by_death(const void *a, const void *b) {
  const rt_arena_buf *x = &sort_base[*(const int *)a], *y = &sort_base[*(const int *)b];
  if (x->death != y->death) return x->death < y->death ? -1 : 1;
  return *(const int *)a < *(const int *)b ? -1 : 1;
}

static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

int64_t rt_arena_plan(rt_arena_buf *b, int n) {
  int *born = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1)), *dies = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  free_list f = {0};
  int64_t top = 0;
  bool ok = born && dies;
  for (int i = 0; ok && i < n; i++) born[i] = dies[i] = i;
  if (ok) {
    pthread_mutex_lock(&sort_lock); /* qsort has no context argument in C17 */
    sort_base = b;
    qsort(born, (size_t)n, sizeof *born, by_birth);
    qsort(dies, (size_t)n, sizeof *dies, by_death);
    pthread_mutex_unlock(&sort_lock);
  }
  int nb = 0, nd = 0;
  while (ok && (nb < n || nd < n)) {
    /* births of step t before deaths of step t (inclusive lifetimes) */
    int t = nb < n ? b[born[nb]].birth : b[dies[nd]].death;
    if (nd < n && b[dies[nd]].death < t) t = b[dies[nd]].death;
    for (; nb < n && b[born[nb]].birth == t; nb++) {
      rt_arena_buf *x = &b[born[nb]];
      x->offset = place(&f, rt_arena_round(x->bytes), &top);
    }
    for (; ok && nd < n && b[dies[nd]].death == t; nd++) {
      rt_arena_buf *x = &b[dies[nd]];
      ok = release(&f, x->offset, rt_arena_round(x->bytes));
    }
  }
  free(born);
  free(dies);
  free(f.r);
  return ok ? top : -1;
}

/* ---------------- the pool ---------------- */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  void *data;
  int64_t bytes;
} pool[PPCC_MAX_DEVICES];
static struct {
  int64_t planned, scratch;
} last_run[PPCC_MAX_DEVICES];

void *rt_arena_take(int dev, int64_t bytes, bool *fresh) {
  void *p = NULL;
  *fresh = false;
  if (dev < 0 || dev >= PPCC_MAX_DEVICES) return NULL;
  pthread_mutex_lock(&pool_lock);
  if (pool[dev].data && pool[dev].bytes >= bytes) {
    p = pool[dev].data;
    pool[dev].data = NULL;
  }
  pthread_mutex_unlock(&pool_lock);
  if (!p) {
    p = rt_alloc(bytes > 0 ? bytes : RT_ARENA_ALIGN);
    *fresh = true;
  }
  return p;
}

void rt_arena_give(int dev, void *p, int64_t bytes) {
  if (!p) return;
  void *drop = p;
  pthread_mutex_lock(&pool_lock);
  if (dev >= 0 && dev < PPCC_MAX_DEVICES && (!pool[dev].data || pool[dev].bytes < bytes)) {
    drop = pool[dev].data; /* keep the larger block */
    pool[dev].data = p;
    pool[dev].bytes = bytes;
  }
  pthread_mutex_unlock(&pool_lock);
  rt_free(drop);
}

void rt_arena_record(int dev, int64_t planned, int64_t scratch) {
  if (dev < 0 || dev >= PPCC_MAX_DEVICES) return;
  pthread_mutex_lock(&pool_lock);
  last_run[dev].planned = planned;
  last_run[dev].scratch = scratch;
  pthread_mutex_unlock(&pool_lock);
}

int64_t ppcc_rt_arena_bytes(int device, int64_t *planned, int64_t *scratch) {
  if (device < 0 || device >= PPCC_MAX_DEVICES) return 0;
  pthread_mutex_lock(&pool_lock);
  int64_t p = last_run[device].planned, s = last_run[device].scratch;
  pthread_mutex_unlock(&pool_lock);
  if (planned) *planned = p;
  if (scratch) *scratch = s;
  return p + s;
}
