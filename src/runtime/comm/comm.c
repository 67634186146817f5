/* The communication ABI (include/ppcc/runtime.h, DESIGN §7): a mailbox per
 * device guarded by a mutex + condition variable, point-to-point send/recv,
 * and the collectives built only from them, so another backend (MPI) can
 * implement the same functions.
 *
 * Sends never block: if the receiver already waits for that sender, the
 * data is copied straight into its buffer; otherwise into a queued message.
 * A receive first polls for up to RECV_POLL_US, giving its core to any
 * other runnable thread between polls (sched_yield), then sleeps on the
 * mailbox's condition variable, so more devices than cores works. An
 * abort flag wakes every waiter.
 *
 * In an MPI run (rt_comm_attach_dist) moves to or from a device of another
 * rank go to comm_mpi.c instead of a mailbox; the collectives below are
 * unchanged, so they sum in the same order across ranks. */
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "comm.h"

typedef struct rt_msg {
  struct rt_msg *next;
  int src;
  int64_t bytes;
  _Alignas(64) unsigned char data[];
} rt_msg;

/* A receive the owner is blocked in, filled by the matching sender. */
typedef struct rt_posted_recv {
  bool active, done;
  int src;
  void *buf;
  int64_t bytes;
} rt_posted_recv;

typedef struct rt_mailbox {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  rt_msg *head, *tail;
  rt_posted_recv posted;
} rt_mailbox;

struct ppcc_rt_comm {
  int n;
  bool dist; /* devices of other MPI ranks are reached through comm_mpi.c */
  rt_mailbox *boxes;
  atomic_bool aborted;
  pthread_mutex_t error_lock;
  int error_device;
  char error_message[1024];
};

ppcc_rt_comm *ppcc_rt_comm_new(int n_devices) {
  if (n_devices < 1 || n_devices > PPCC_MAX_DEVICES) return NULL;
  ppcc_rt_comm *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->boxes = calloc((size_t)n_devices, sizeof *c->boxes);
  if (!c->boxes) {
    free(c);
    return NULL;
  }
  c->n = n_devices;
  for (int i = 0; i < n_devices; i++) {
    pthread_mutex_init(&c->boxes[i].lock, NULL);
    pthread_cond_init(&c->boxes[i].cond, NULL);
  }
  pthread_mutex_init(&c->error_lock, NULL);
  atomic_init(&c->aborted, false);
  c->error_device = -1;
  return c;
}

void rt_comm_attach_dist(ppcc_rt_comm *c) {
  if (!c || !rt_dist_active()) return;
  c->dist = true;
  rt_dist_bind_comm(c);
}

void ppcc_rt_comm_free(ppcc_rt_comm *c) {
  if (!c) return;
  if (c->dist) rt_dist_bind_comm(NULL);
  for (int i = 0; i < c->n; i++) {
    for (rt_msg *m = c->boxes[i].head; m;) { /* undelivered after an abort */
      rt_msg *next = m->next;
      rt_reuse_free(m);
      m = next;
    }
    pthread_mutex_destroy(&c->boxes[i].lock);
    pthread_cond_destroy(&c->boxes[i].cond);
  }
  pthread_mutex_destroy(&c->error_lock);
  free(c->boxes);
  free(c);
}

bool ppcc_rt_aborted(const ppcc_rt_comm *c) {
  return atomic_load_explicit(&((ppcc_rt_comm *)c)->aborted, memory_order_acquire);
}

/* Sets the flag (first message wins) and wakes every waiter; true if this
 * call recorded the first failure. */
static bool abort_local(ppcc_rt_comm *c, int device, const char *message) {
  pthread_mutex_lock(&c->error_lock);
  bool first = c->error_device < 0 && !ppcc_rt_aborted(c);
  if (first) {
    c->error_device = device;
    snprintf(c->error_message, sizeof c->error_message, "%s", message ? message : "failed");
  }
  atomic_store_explicit(&c->aborted, true, memory_order_release);
  pthread_mutex_unlock(&c->error_lock);
  /* Taking each lock before broadcasting means a waiter either saw the
   * flag or is already inside pthread_cond_wait: no lost wake-up. */
  for (int i = 0; i < c->n; i++) {
    pthread_mutex_lock(&c->boxes[i].lock);
    pthread_cond_broadcast(&c->boxes[i].cond);
    pthread_mutex_unlock(&c->boxes[i].lock);
  }
  return first;
}

/* With MPI, other ranks learn of the failure once this rank's devices
 * stopped (rt_dist_agree), with the executor's full message (device, op). */
void ppcc_rt_abort(ppcc_rt_comm *c, int device, const char *message) { abort_local(c, device, message); }

void rt_comm_remote_abort(ppcc_rt_comm *c, int device, const char *message) {
  abort_local(c, PPCC_MAX_DEVICES, message); /* no device of this rank: report the message as it is */
}

int ppcc_rt_comm_error(const ppcc_rt_comm *c, const char **message) {
  ppcc_rt_comm *m = (ppcc_rt_comm *)c;
  pthread_mutex_lock(&m->error_lock);
  int dev = m->error_device;
  pthread_mutex_unlock(&m->error_lock);
  if (message) *message = m->error_message;
  return dev;
}

static bool valid_device(const ppcc_rt_comm *c, int dev) { return dev >= 0 && dev < c->n; }

static int size_mismatch(ppcc_rt_comm *c, int src, int dst, int64_t sent, int64_t expected) {
  char msg[256];
  snprintf(msg, sizeof msg, "message size mismatch: device %d sent %lld bytes, device %d expected %lld", src,
           (long long)sent, dst, (long long)expected);
  ppcc_rt_abort(c, dst, msg);
  return -1;
}

/* Delivers into a posted receive; called with the mailbox locked. */
static int deliver_direct(rt_mailbox *box, const void *buf, int64_t bytes) {
  if (box->posted.bytes != bytes) return -1;
  if (bytes > 0) memcpy(box->posted.buf, buf, (size_t)bytes);
  box->posted.done = true;
  pthread_cond_broadcast(&box->cond);
  return 0;
}

static int enqueue_copy(rt_mailbox *box, int self, const void *buf, int64_t bytes) {
  rt_msg *m = rt_reuse_alloc((int64_t)(sizeof *m) + bytes); /* 64-byte aligned, as the struct needs */
  if (!m) return -1;
  m->next = NULL;
  m->src = self;
  m->bytes = bytes;
  if (bytes > 0) memcpy(m->data, buf, (size_t)bytes);
  if (box->tail)
    box->tail->next = m;
  else
    box->head = m;
  box->tail = m;
  pthread_cond_broadcast(&box->cond);
  return 0;
}

/* A short wait (an all_reduce partner a few microseconds behind, a small
 * pipeline stage handing over) ends before a sleeping thread would be
 * woken: on this project's VMs a futex sleep left the vCPU halted, and
 * the wake across it cost 5-25 us per wait. Polling with sched_yield
 * keeps the core only while nothing else there can run. Measured (2
 * cores, interp, --repeat 300, forward median): gen_llama TP2 decode
 * 0.79 -> 0.38 ms, tiny_llama 0.43 -> 0.18, 8-block TP2xPP2 pipeline
 * 1.55 -> 1.30; one-device-per-stage pipelines unchanged. */
#define RECV_POLL_US 200
static _Atomic double recv_poll_us = RECV_POLL_US;
static atomic_long recv_sleeps;

void rt_comm_set_recv_poll_us(double us) { recv_poll_us = us >= 0 ? us : RECV_POLL_US; }
long rt_comm_recv_sleeps(void) { return recv_sleeps; }

/* Polls box->posted (locked on entry and on return) until it is done,
 * the run aborted or the poll time ran out. */
static void poll_posted(ppcc_rt_comm *c, rt_mailbox *box) {
  double limit = recv_poll_us * 1e-6, t0 = limit > 0 ? omp_get_wtime() : 0;
  while (limit > 0 && !box->posted.done && !ppcc_rt_aborted(c)) {
    pthread_mutex_unlock(&box->lock);
    sched_yield();
    pthread_mutex_lock(&box->lock);
    if (omp_get_wtime() - t0 > limit) break;
  }
}

static void (*_Atomic wait_hook)(void);

void rt_comm_set_wait_hook(void (*before_wait)(void)) { wait_hook = before_wait; }

/* Before a device hands a value over (the receiver starts computing and
 * needs the cores) or blocks on a receive. */
static void before_wait(void) {
  void (*hook)(void) = wait_hook;
  if (hook) hook();
}

int ppcc_rt_send(ppcc_rt_comm *c, int self, int dst, const void *buf, int64_t bytes) {
  if (!valid_device(c, self) || !valid_device(c, dst) || bytes < 0) {
    ppcc_rt_abort(c, self, "send: bad device or size");
    return -1;
  }
  if (ppcc_rt_aborted(c)) return -1;
  before_wait();
  if (c->dist && !rt_dist_local(dst)) return rt_dist_send(c, self, dst, buf, bytes);
  rt_mailbox *box = &c->boxes[dst];
  pthread_mutex_lock(&box->lock);
  bool direct = box->posted.active && !box->posted.done && box->posted.src == self;
  int64_t expected = box->posted.bytes;
  int rc = direct ? deliver_direct(box, buf, bytes) : enqueue_copy(box, self, buf, bytes);
  pthread_mutex_unlock(&box->lock);
  if (rc == 0) return 0;
  if (direct) return size_mismatch(c, self, dst, bytes, expected);
  ppcc_rt_abort(c, self, "send: out of memory");
  return -1;
}

/* Unlinks and returns the oldest queued message from src, or NULL. */
static rt_msg *take_message(rt_mailbox *box, int src) {
  rt_msg *prev = NULL;
  for (rt_msg *m = box->head; m; prev = m, m = m->next) {
    if (m->src != src) continue;
    if (prev)
      prev->next = m->next;
    else
      box->head = m->next;
    if (box->tail == m) box->tail = prev;
    return m;
  }
  return NULL;
}

int ppcc_rt_recv(ppcc_rt_comm *c, int self, int src, void *buf, int64_t bytes) {
  if (!valid_device(c, self) || !valid_device(c, src) || bytes < 0) {
    ppcc_rt_abort(c, self, "recv: bad device or size");
    return -1;
  }
  if (c->dist && !rt_dist_local(src)) {
    before_wait();
    return rt_dist_recv(c, self, src, buf, bytes);
  }
  rt_mailbox *box = &c->boxes[self];
  pthread_mutex_lock(&box->lock);
  rt_msg *m = take_message(box, src);
  if (m) {
    pthread_mutex_unlock(&box->lock);
    int64_t got = m->bytes;
    if (got == bytes && bytes > 0) memcpy(buf, m->data, (size_t)bytes);
    rt_reuse_free(m);
    return got == bytes ? 0 : size_mismatch(c, src, self, got, bytes);
  }
  box->posted = (rt_posted_recv){true, false, src, buf, bytes};
  if (!box->posted.done) {
    pthread_mutex_unlock(&box->lock); /* the hook must not run under the box's lock */
    before_wait();
    pthread_mutex_lock(&box->lock);
  }
  poll_posted(c, box);
  if (!box->posted.done && !ppcc_rt_aborted(c)) recv_sleeps++;
  while (!box->posted.done && !ppcc_rt_aborted(c)) {
    if (!c->dist) {
      pthread_cond_wait(&box->cond, &box->lock);
      continue;
    }
    /* Distributed: wake up now and then to take in other ranks' aborts. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 2000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&box->cond, &box->lock, &until);
    pthread_mutex_unlock(&box->lock);
    rt_dist_poll();
    pthread_mutex_lock(&box->lock);
  }
  bool done = box->posted.done;
  box->posted = (rt_posted_recv){0};
  pthread_mutex_unlock(&box->lock);
  return done ? 0 : -1;
}

/* ---------------- collectives ---------------- */

static bool is_float(int dtype) { return ppcc_dtype_is_float((ppcc_dtype)dtype); }

/* Sums the n contributions to one block in shard order 0..n-1: own is
 * this rank's, the others arrive by recv from devices[i]. Result goes to
 * out (count elements of dtype). */
static int reduce_block_in_order(ppcc_rt_comm *c, const int *devices, int n, int rank, int dtype,
                                 const void *own, void *out, int64_t count) {
  int es = ppcc_dtype_size((ppcc_dtype)dtype);
  void *tmp = rt_reuse_alloc(count * es);
  float *acc = is_float(dtype) ? rt_reuse_calloc(count * 4) : NULL;
  void *iacc = is_float(dtype) ? NULL : rt_reuse_calloc(count * es);
  int rc = (tmp && (acc || iacc)) ? 0 : -1;
  if (rc) ppcc_rt_abort(c, devices[rank], "collective: out of memory");
  for (int i = 0; i < n && rc == 0; i++) {
    const void *part = own;
    if (i != rank) {
      rc = ppcc_rt_recv(c, devices[rank], devices[i], tmp, count * es);
      part = tmp;
    }
    if (rc) break;
    if (acc)
      rt_acc_f32((ppcc_dtype)dtype, part, acc, count);
    else
      rt_add_int((ppcc_dtype)dtype, part, iacc, count);
  }
  if (rc == 0) {
    if (acc)
      rt_from_f32((ppcc_dtype)dtype, acc, out, count);
    else
      memcpy(out, iacc, (size_t)(count * es));
  }
  rt_reuse_free(tmp);
  rt_reuse_free(acc);
  rt_reuse_free(iacc);
  return rc;
}

static bool group_ok(const ppcc_rt_comm *c, const int *devices, int n, int rank) {
  if (n < 1 || rank < 0 || rank >= n) return false;
  for (int i = 0; i < n; i++)
    if (!valid_device(c, devices[i])) return false;
  return true;
}

static int bad_group(ppcc_rt_comm *c, const int *devices, int n, int rank, const char *what) {
  char msg[128];
  snprintf(msg, sizeof msg, "%s: bad device group (n=%d, rank=%d)", what, n, rank);
  ppcc_rt_abort(c, n > 0 && rank >= 0 && rank < n ? devices[rank] : -1, msg);
  return -1;
}

/* Reduce-scatter of flat near-equal chunks, then all-gather of the reduced
 * chunks: every element is summed once, by its chunk's owner, in shard
 * order, so all members end with identical bits. */
int ppcc_rt_all_reduce(ppcc_rt_comm *c, const int *devices, int n, int rank, int dtype, void *buf,
                       int64_t count) {
  if (!group_ok(c, devices, n, rank)) return bad_group(c, devices, n, rank, "all_reduce");
  if (n == 1) return ppcc_rt_aborted(c) ? -1 : 0;
  int es = ppcc_dtype_size((ppcc_dtype)dtype);
  char *b = buf;
#define CHUNK_BEGIN(j) (count * (j) / n)
#define CHUNK_LEN(j) (CHUNK_BEGIN((j) + 1) - CHUNK_BEGIN(j))
  int self = devices[rank];
  for (int j = 0; j < n; j++)
    if (j != rank && ppcc_rt_send(c, self, devices[j], b + CHUNK_BEGIN(j) * es, CHUNK_LEN(j) * es)) return -1;
  char *mine = b + CHUNK_BEGIN(rank) * es;
  if (reduce_block_in_order(c, devices, n, rank, dtype, mine, mine, CHUNK_LEN(rank))) return -1;
  for (int j = 0; j < n; j++)
    if (j != rank && ppcc_rt_send(c, self, devices[j], mine, CHUNK_LEN(rank) * es)) return -1;
  for (int i = 0; i < n; i++)
    if (i != rank && ppcc_rt_recv(c, self, devices[i], b + CHUNK_BEGIN(i) * es, CHUNK_LEN(i) * es)) return -1;
#undef CHUNK_BEGIN
#undef CHUNK_LEN
  return 0;
}

int ppcc_rt_all_gather(ppcc_rt_comm *c, const int *devices, int n, int rank, int dtype,
                       const void *shard, void *full, int64_t outer, int64_t inner) {
  if (!group_ok(c, devices, n, rank)) return bad_group(c, devices, n, rank, "all_gather");
  int es = ppcc_dtype_size((ppcc_dtype)dtype);
  int64_t bytes = outer * inner * es;
  rt_split_geom geom = {outer, inner};
  int self = devices[rank];
  for (int j = 0; j < n; j++)
    if (j != rank && ppcc_rt_send(c, self, devices[j], shard, bytes)) return -1;
  rt_copy_shard_in(full, shard, geom, n, rank, es);
  void *tmp = n > 1 ? rt_reuse_alloc(bytes) : NULL;
  if (n > 1 && !tmp) {
    ppcc_rt_abort(c, self, "all_gather: out of memory");
    return -1;
  }
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    if (i == rank) continue;
    rc = ppcc_rt_recv(c, self, devices[i], tmp, bytes);
    if (rc == 0) rt_copy_shard_in(full, tmp, geom, n, i, es);
  }
  rt_reuse_free(tmp);
  return rc;
}

int ppcc_rt_reduce_scatter(ppcc_rt_comm *c, const int *devices, int n, int rank, int dtype,
                           const void *full, void *shard, int64_t outer, int64_t inner) {
  if (!group_ok(c, devices, n, rank)) return bad_group(c, devices, n, rank, "reduce_scatter");
  int es = ppcc_dtype_size((ppcc_dtype)dtype);
  int64_t count = outer * inner;
  rt_split_geom geom = {outer, inner};
  int self = devices[rank];
  void *block = rt_reuse_alloc(count * es);
  if (!block) {
    ppcc_rt_abort(c, self, "reduce_scatter: out of memory");
    return -1;
  }
  int rc = 0;
  for (int j = 0; j < n && rc == 0; j++) {
    if (j == rank) continue;
    rt_copy_shard_out(full, block, geom, n, j, es);
    rc = ppcc_rt_send(c, self, devices[j], block, count * es);
  }
  if (rc == 0) {
    rt_copy_shard_out(full, block, geom, n, rank, es);
    rc = reduce_block_in_order(c, devices, n, rank, dtype, block, shard, count);
  }
  rt_reuse_free(block);
  return rc;
}
