/* The kernels' own threads: one small pool per calling thread (a device
 * thread, or the main thread), workers created on first use and parked on
 * a futex between calls. They replace OpenBLAS's workers (kept at one
 * thread by blas.c): those spin with sched_yield for ~2^28 cycles after
 * each call, against the device thread's own non-BLAS kernels on the same
 * cores (about a third of decode samples). Ours spin for at most
 * SPIN_NS, only waiting for the next part of the same run of kernels,
 * then sleep. One pool per caller, so devices that compute at once never
 * share or queue on one.
 *
 * Devices that compute one at a time (rt_pool_share: a pipeline's stages
 * with one microbatch, each device thread on one core and the workers on
 * the others) share one pool instead. Waking a parked worker cost the
 * caller 16-25 us in its futex_wake where the worker's core idled in a VM
 * (an IPI to a halted vCPU), and each stage's pool had parked while the
 * stages before it ran: a decode stage's first split product (its gate
 * projection) took 30-40 us instead of 9-12 (gen_llama decode pp4, 2
 * cores). The shared workers are still spinning from the previous stage's
 * products, on cores no device thread uses, so nothing parks them; a
 * caller that finds the pool taken (devices overlapping more than the
 * budget counted) runs every part itself, in order: the same bits. */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "kernels.h"

#define MAX_WORKERS 63
/* A decode step's gaps between two products (norms, rotary, attention)
 * reach a few hundred us: with a 50 us spin a worker often slept and woke
 * late for the next product, the caller waiting (500 us: decode +6 %
 * median over 50 us, 20 paired rounds; 2 ms was slower under load). */
#define SPIN_NS 500000
/* The shared pool's workers (rt_pool_share) have cores of their own: they
 * also spin across the gap between two forwards (0.6-0.8 ms of a run's
 * bookkeeping under --check-plan), else the first stage's first split
 * product of every forward woke them (+25 us on a decode stage). */
#define SHARED_SPIN_NS 2000000

typedef struct pool pool;
typedef struct worker {
  pool *owner;
  int index; /* the part it runs: 1.. */
  atomic_uint job; /* bumped by the caller for each part handed to it */
  atomic_int sleeping;
} worker;

struct pool {
  int n_workers;
  worker w[MAX_WORKERS];
  rt_part_fn fn;
  void *arg;
  int parts;
  atomic_int pending; /* parts not finished */
  atomic_int caller_sleeping;
  atomic_int parked; /* rt_pool_park: no next part soon, the workers sleep at once */
  atomic_bool taken; /* a call runs on it (the shared pool has several callers) */
  int64_t spin_ns;   /* how long its workers spin for a next part */
};

static _Thread_local pool *my_pool;
static pool *shared_pool; /* made on first use while sharing; lives as long as its workers */
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool sharing;
static _Thread_local bool in_part; /* inside a part: nested calls run inline */

/* Where workers may run (rt_pool_set_worker_cpus); all pools' workers. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_set_t worker_cpus;
static bool worker_cpus_set;
static pthread_t *all_workers;
static int n_all_workers, cap_all_workers;

static void futex_wait(atomic_uint *addr, unsigned val) {
  syscall(SYS_futex, (unsigned *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
static void futex_wake(atomic_uint *addr) { syscall(SYS_futex, (unsigned *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); }

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Waits until *addr != seen: a short spin (none once *parked), then the futex. */
static unsigned wait_change(atomic_uint *addr, unsigned seen, atomic_int *sleeping, atomic_int *parked, int64_t spin_ns) {
  unsigned v;
  int64_t until = 0;
  for (int i = 0;; i++) {
    if ((v = atomic_load_explicit(addr, memory_order_acquire)) != seen) return v;
    if (atomic_load_explicit(parked, memory_order_relaxed)) break;
    if ((i & 63) == 63) {
      int64_t t = now_ns();
      if (!until) until = t + spin_ns;
      else if (t > until) break;
    }
    cpu_relax();
  }
  for (;;) {
    atomic_store(sleeping, 1);
    if ((v = atomic_load(addr)) != seen) break;
    futex_wait(addr, seen);
    if ((v = atomic_load(addr)) != seen) break;
  }
  atomic_store(sleeping, 0);
  return v;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  pool *p = w->owner;
  unsigned seen = 0;
  in_part = true;
  for (;;) {
    seen = wait_change(&w->job, seen, &w->sleeping, &p->parked, p->spin_ns);
    p->fn(p->arg, w->index, p->parts);
    if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_sleeping))
      futex_wake((atomic_uint *)&p->pending);
  }
  return NULL;
}

/* A detached worker thread where the pools' workers run (and moved with them). */
static bool rt_pool_spawn(void *(*fn)(void *), void *arg) {
  pthread_attr_t a;
  if (pthread_attr_init(&a) != 0) return false;
  pthread_attr_setstacksize(&a, (size_t)1 << 20);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_mutex_lock(&registry_lock);
  cpu_set_t cpus;
  if (!worker_cpus_set) sched_getaffinity(0, sizeof cpus, &cpus); /* not the caller's pinned core */
  pthread_attr_setaffinity_np(&a, sizeof cpus, worker_cpus_set ? &worker_cpus : &cpus);
  bool ok = n_all_workers < cap_all_workers;
  if (!ok) {
    int cap = cap_all_workers ? cap_all_workers * 2 : 16;
    pthread_t *grown = realloc(all_workers, sizeof *grown * (size_t)cap);
    if (grown) {
      all_workers = grown;
      cap_all_workers = cap;
      ok = true;
    }
  }
  pthread_t t;
  ok = ok && pthread_create(&t, &a, fn, arg) == 0;
  if (ok) all_workers[n_all_workers++] = t;
  pthread_mutex_unlock(&registry_lock);
  pthread_attr_destroy(&a);
  return ok;
}

static bool start_worker(pool *p) {
  worker *w = &p->w[p->n_workers];
  w->owner = p;
  w->index = p->n_workers + 1;
  atomic_init(&w->job, 0);
  atomic_init(&w->sleeping, 0);
  if (!rt_pool_spawn(worker_main, w)) return false;
  p->n_workers++;
  return true;
}

void rt_pool_set_worker_cpus(const void *cpus, size_t size) {
  if (size != sizeof worker_cpus) return;
  pthread_mutex_lock(&registry_lock);
  memcpy(&worker_cpus, cpus, size);
  worker_cpus_set = true;
  for (int i = 0; i < n_all_workers; i++) pthread_setaffinity_np(all_workers[i], size, &worker_cpus);
  pthread_mutex_unlock(&registry_lock);
}

bool rt_in_pool_part(void) { return in_part; }

/* Off: the shared workers sleep at once, not spinning on through cores
 * the next run may give to its device threads. */
void rt_pool_share(bool on) {
  atomic_store(&sharing, on);
  pthread_mutex_lock(&shared_lock);
  if (!on && shared_pool) atomic_store(&shared_pool->parked, 1);
  pthread_mutex_unlock(&shared_lock);
}

/* Parks the caller's own pool only: the shared one serves the device that
 * computes next, which the one about to wait is not. */
void rt_pool_park(void) {
  if (my_pool && !in_part) atomic_store(&my_pool->parked, 1);
}

static pool *caller_pool(void) {
  if (!atomic_load(&sharing)) {
    if (!my_pool && (my_pool = calloc(1, sizeof *my_pool))) my_pool->spin_ns = SPIN_NS; /* lives as long as its workers */
    return my_pool;
  }
  pthread_mutex_lock(&shared_lock);
  if (!shared_pool && (shared_pool = calloc(1, sizeof *shared_pool))) shared_pool->spin_ns = SHARED_SPIN_NS;
  pool *p = shared_pool;
  pthread_mutex_unlock(&shared_lock);
  return p;
}

/* A forked child has only the forking thread: its pools' workers are
 * gone, so it starts new ones (the old pools are left as they are). */
static void forget_pools_in_child(void) {
  my_pool = NULL;
  shared_pool = NULL;
  pthread_mutex_init(&shared_lock, NULL);
  in_part = false;
  pthread_mutex_init(&registry_lock, NULL);
  n_all_workers = 0;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, forget_pools_in_child); }

static void run_whole(rt_part_fn fn, void *arg) {
  bool was = in_part;
  in_part = true;
  fn(arg, 0, 1);
  in_part = was;
}

void rt_parallel_parts(int parts, rt_part_fn fn, void *arg) {
  if (parts > MAX_WORKERS + 1) parts = MAX_WORKERS + 1;
  if (parts <= 1 || in_part) {
    run_whole(fn, arg);
    return;
  }
  pthread_once(&atfork_once, register_atfork);
  pool *p = caller_pool();
  if (p && atomic_exchange(&p->taken, true)) { /* another device's call holds it: every part here, in order */
    in_part = true;
    for (int i = 0; i < parts; i++) fn(arg, i, parts);
    in_part = false;
    return;
  }
  while (p && p->n_workers < parts - 1 && start_worker(p)) {
  }
  if (!p || p->n_workers < parts - 1) { /* no threads to be had: all of it here */
    if (p) atomic_store(&p->taken, false);
    run_whole(fn, arg);
    return;
  }
  p->fn = fn;
  p->arg = arg;
  p->parts = parts;
  atomic_store(&p->parked, 0);
  atomic_store(&p->pending, parts - 1);
  for (int i = 0; i < parts - 1; i++) {
    atomic_fetch_add(&p->w[i].job, 1);
    if (atomic_load(&p->w[i].sleeping)) futex_wake(&p->w[i].job);
  }
  in_part = true;
  fn(arg, 0, parts);
  in_part = false;
  int left;
  int64_t until = 0; /* spin as the workers do, then sleep: on a crowded machine the spin would hold the core a worker waits for */
  for (int i = 0; (left = atomic_load(&p->pending)) > 0; i++) {
    if ((i & 63) == 63) {
      int64_t t = now_ns();
      if (!until) until = t + SPIN_NS;
      else if (t > until) break;
    }
    cpu_relax();
  }
  while ((left = atomic_load(&p->pending)) > 0) {
    atomic_store(&p->caller_sleeping, 1);
    if (atomic_load(&p->pending) > 0) futex_wait((atomic_uint *)&p->pending, (unsigned)left);
  }
  atomic_store(&p->caller_sleeping, 0);
  atomic_store(&p->taken, false);
}

void rt_part_range(int64_t n, int64_t align, int part, int parts, int64_t *begin, int64_t *end) {
  int64_t units = (n + align - 1) / align;
  int64_t b = units * part / parts, e = units * (part + 1) / parts;
  *begin = b * align < n ? b * align : n;
  *end = e * align < n ? e * align : n;
}

typedef struct range_job {
  int64_t n, align;
  rt_range_fn fn;
  void *arg;
} range_job;

static void range_part(void *arg, int part, int parts) {
  const range_job *j = arg;
  int64_t b, e;
  rt_part_range(j->n, j->align, part, parts, &b, &e);
  if (e > b) j->fn(j->arg, b, e);
}

typedef struct guided_job {
  int64_t n, align, min_chunk;
  rt_range_fn fn;
  void *arg;
  atomic_int_fast64_t next; /* the first item no part has taken */
} guided_job;

/* Big chunks first, small ones last, so the parts finish together. */
static void guided_part(void *arg, int part, int parts) {
  (void)part;
  guided_job *j = arg;
  int_fast64_t b = atomic_load(&j->next), size;
  for (;;) {
    do {
      if (b >= j->n) return;
      size = (j->n - b) / (2 * parts);
      if (size < j->min_chunk) size = j->min_chunk;
      size = (size + j->align - 1) / j->align * j->align;
    } while (!atomic_compare_exchange_weak(&j->next, &b, b + size));
    j->fn(j->arg, b, b + size < j->n ? b + size : j->n);
    b = atomic_load(&j->next);
  }
}

void rt_parallel_guided(int parts, int64_t n, int64_t align, int64_t min_chunk, rt_range_fn fn, void *arg) {
  if (n <= 0) return;
  guided_job j = {.n = n, .align = align > 0 ? align : 1, .min_chunk = min_chunk > 0 ? min_chunk : 1, .fn = fn, .arg = arg};
  atomic_init(&j.next, 0);
  rt_parallel_parts(parts, guided_part, &j);
}

void rt_parallel_range(int64_t n, int64_t align, int64_t min_items, rt_range_fn fn, void *arg) {
  if (n <= 0) return;
  int threads = in_part ? 1 : rt_kernel_threads();
  int64_t most = min_items > 0 ? n / min_items : n;
  int parts = most < threads ? (int)(most > 1 ? most : 1) : threads;
  if (parts <= 1) {
    fn(arg, 0, n);
    return;
  }
  range_job j = {n, align > 0 ? align : 1, fn, arg};
  rt_parallel_parts(parts, range_part, &j);
}
