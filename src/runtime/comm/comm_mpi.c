/* The ppcc_rt_* ABI across MPI ranks (DESIGN §10, include/ppcc/mpi.h).
 *
 * comm.c keeps the per-device mailboxes for devices of this rank and hands
 * every move to or from a device of another rank to rt_dist_send/recv:
 *   - a message from device s to device t is an MPI message on the data
 *     communicator with tag s * n_devices + t; MPI keeps messages with the
 *     same source and tag in order, which is the FIFO order the executors
 *     rely on. Sizes above 1 GiB go as several messages.
 *   - sends never block (the executors need that to be deadlock-free): the
 *     bytes are copied and sent with MPI_Isend; completed sends are freed
 *     whenever any call polls.
 *   - receives post MPI_Irecv and poll it (a short spin, then short sleeps),
 *     so a waiting device notices an abort and a timeout instead of
 *     hanging in MPI_Recv.
 * Aborts: a failing rank stops its own devices (comm.c), then sends its
 * message ("rank R: device D: op ...: why") to every other rank on the
 * control communicator; a rank that receives it aborts its local
 * communicator with that message, which wakes its waiting devices. At the end every rank takes part in one
 * agreement (an all-reduce of "failed"), so all exit with the same status.
 * A peer that never answers (killed, hung, cut off) runs into PPCC_MPI_TIMEOUT
 * seconds (default 300) of waiting, after which MPI_Abort ends every rank;
 * a rank that timed out waiting gives up at once instead of also waiting
 * for the agreement, so a fault ends the job within one timeout.
 * The run-wide steps (the barrier after loading, the agreement) are
 * messages between every pair of ranks, so a rank that gives up names the
 * ranks that did not answer.
 * Calls with no timeout of their own (MPI_Init, MPI_Finalize, MPI_Abort,
 * the gathers after a run) run under a watchdog: a thread that _exits the
 * process once their bound passes (over TCP, MPICH 4.0.2 with UCX 1.13 can
 * hang in MPI_Finalize, and a cut-off rank's MPI_Abort cannot reach
 * mpiexec). Outputs are committed atomically before, so nothing is left
 * half-written.
 *
 * Every MPI call is made under one mutex (calls are short: only nonblocking
 * operations and tests), which keeps request lists simple. */
#include <errno.h>
#include <mpi.h>
#include <omp.h>
#include <stdarg.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "ppcc/mpi.h"
#include "comm.h"

#define CHUNK_BYTES ((int64_t)1 << 30)
#define ABORT_TEXT 1024
#define TAG_ABORT 1
#define TAG_TIMELINE 2
#define TAG_AGREE 3
#define TAG_SYNC 4
#define TAG_LINK 5
/* How long MPI_Finalize and MPI_Abort may take (and the margin on top of
 * PPCC_MPI_TIMEOUT for MPI_Init and the gathers) before the watchdog ends
 * the process: PPCC_MPI_EXIT_MARGIN seconds, default 10. */
#define EXIT_MARGIN_S D.exit_margin_s

typedef struct pending_send {
  struct pending_send *next;
  int n_req;
  MPI_Request *req;
  void *buf;
  int64_t cap; /* > 0: buf goes back to the pool */
} pending_send;

typedef struct abort_msg {
  int device;
  char text[ABORT_TEXT];
} abort_msg;

/* Send copies are reused (a fresh multi-MiB malloc costs a page fault per
 * 4 KiB on its first write): a few free buffers are kept by capacity. */
#define POOL_SLOTS 8
typedef struct pooled_buffer {
  void *p;
  int64_t cap;
} pooled_buffer;

static struct {
  bool initialized, active;
  pooled_buffer pool[POOL_SLOTS];
  int rank, size, host_ranks;
  MPI_Comm data, control, sync;
  double timeout_s, exit_margin_s;
  int n_devices;
  int *rank_of;
  pthread_mutex_t lock;
  pending_send *pending;
  /* the posted receive of another rank's abort */
  MPI_Request abort_req;
  abort_msg abort_in;
  bool remote_failed;
  abort_msg remote;
  bool broadcast_done;
  int silent_rank; /* >= 0: a receive from this rank timed out */
  ppcc_rt_comm *comm; /* the communicator of the running executor */
} D = {.lock = PTHREAD_MUTEX_INITIALIZER, .abort_req = MPI_REQUEST_NULL, .silent_rank = -1};

bool ppcc_mpi_available(void) { return true; }
bool ppcc_mpi_initialized(void) { return D.initialized; }
int ppcc_mpi_rank(void) { return D.initialized ? D.rank : 0; }
int ppcc_mpi_size(void) { return D.initialized ? D.size : 1; }

static double now_s(void) { return MPI_Wtime(); }

static void pause_briefly(long spins) {
  if (spins < 200) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, spins < 2000 ? 20000 : 200000}; /* 20 us, later 200 us */
  nanosleep(&ts, NULL);
}

/* ---------------- the exit watchdog ---------------- */

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool started, armed;
  struct timespec deadline; /* CLOCK_MONOTONIC */
  int code;
  char text[400];
} W = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *watchdog_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&W.lock);
  for (;;) {
    int rc = W.armed ? pthread_cond_timedwait(&W.cond, &W.lock, &W.deadline) : pthread_cond_wait(&W.cond, &W.lock);
    if (rc == ETIMEDOUT && W.armed) {
      size_t n = strlen(W.text);
      if (write(STDERR_FILENO, W.text, n) < 0) n = 0;
      _exit(W.code);
    }
  }
  return NULL;
}

/* From now on, the process ends with exit status `code` after printing
 * the message once `seconds` pass, unless watchdog_disarm comes first. */
static void watchdog_arm(double seconds, int code, const char *fmt, ...) {
  pthread_mutex_lock(&W.lock);
  if (!W.started) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&W.cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_t t;
    pthread_attr_t ta;
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    W.started = pthread_create(&t, &ta, watchdog_main, NULL) == 0;
    pthread_attr_destroy(&ta);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(W.text, sizeof W.text - 1, fmt, ap);
  va_end(ap);
  strcat(W.text, "\n");
  clock_gettime(CLOCK_MONOTONIC, &W.deadline);
  long long ns = (long long)(seconds * 1e9);
  W.deadline.tv_sec += (time_t)(ns / 1000000000LL);
  W.deadline.tv_nsec += (long)(ns % 1000000000LL);
  if (W.deadline.tv_nsec >= 1000000000L) W.deadline.tv_sec++, W.deadline.tv_nsec -= 1000000000L;
  W.code = code;
  W.armed = true;
  pthread_cond_signal(&W.cond);
  pthread_mutex_unlock(&W.lock);
}

static void watchdog_disarm(void) {
  pthread_mutex_lock(&W.lock);
  W.armed = false;
  if (W.started) pthread_cond_signal(&W.cond);
  pthread_mutex_unlock(&W.lock);
}

/* An environment variable in seconds (> 0), or the default. */
static double seconds_from_env(const char *name, double fallback) {
  const char *t = getenv(name);
  return t && atof(t) > 0 ? atof(t) : fallback;
}

ppcc_status ppcc_mpi_init(int *argc, char ***argv, ppcc_diag *d) {
  if (D.initialized) return PPCC_OK;
  int provided = 0;
  D.timeout_s = seconds_from_env("PPCC_MPI_TIMEOUT", 300);
  D.exit_margin_s = seconds_from_env("PPCC_MPI_EXIT_MARGIN", 10);
  /* With a host or link down from the start, MPI_Init waits for good. */
  watchdog_arm(D.timeout_s + EXIT_MARGIN_S, 1,
               "ppcc run: error: MPI_Init did not finish within %.0f s (PPCC_MPI_TIMEOUT + %.0f s): "
               "a host or the network between the hosts does not answer", D.timeout_s + EXIT_MARGIN_S, EXIT_MARGIN_S);
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  watchdog_disarm();
  if (rc != MPI_SUCCESS) return ppcc_error(d, "MPI_Init_thread failed");
  if (provided < MPI_THREAD_MULTIPLE) {
    watchdog_arm(EXIT_MARGIN_S, 1, "ppcc run: error: MPI_Finalize did not return within %.0f s", EXIT_MARGIN_S);
    MPI_Finalize();
    return ppcc_error(d, "the MPI library gives thread level %d but ppcc needs MPI_THREAD_MULTIPLE (%d): "
                         "device threads send and receive at the same time", provided, MPI_THREAD_MULTIPLE);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &D.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &D.size);
  MPI_Comm host; /* the ranks sharing this host's cores */
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  MPI_Comm_size(host, &D.host_ranks);
  MPI_Comm_free(&host);
  MPI_Comm_dup(MPI_COMM_WORLD, &D.data);
  MPI_Comm_dup(MPI_COMM_WORLD, &D.control);
  MPI_Comm_dup(MPI_COMM_WORLD, &D.sync);
  MPI_Comm_set_errhandler(D.data, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(D.control, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(D.sync, MPI_ERRORS_RETURN);
  D.initialized = true;
  return PPCC_OK;
}

/* Called with the lock held: a buffer of at least `bytes` (NULL on OOM). */
static void *take_buffer(int64_t bytes, int64_t *cap) {
  for (int i = 0; i < POOL_SLOTS; i++)
    if (D.pool[i].p && D.pool[i].cap >= bytes && D.pool[i].cap <= 2 * bytes + 4096) {
      void *p = D.pool[i].p;
      *cap = D.pool[i].cap;
      D.pool[i].p = NULL;
      return p;
    }
  *cap = bytes > 0 ? bytes : 1;
  return malloc((size_t)*cap);
}

/* Called with the lock held: keeps buf for reuse, or frees it. */
static void give_buffer(void *buf, int64_t cap) {
  for (int i = 0; i < POOL_SLOTS; i++)
    if (!D.pool[i].p) {
      D.pool[i] = (pooled_buffer){buf, cap};
      return;
    }
  free(buf);
}

static void free_pool(void) {
  for (int i = 0; i < POOL_SLOTS; i++) free(D.pool[i].p);
  memset(D.pool, 0, sizeof D.pool);
}

/* Called with the lock held: frees the sends MPI has finished. */
static void reap_sends(void) {
  for (pending_send **p = &D.pending; *p;) {
    int done = 1;
    for (int i = 0; i < (*p)->n_req && done; i++) MPI_Test(&(*p)->req[i], &done, MPI_STATUS_IGNORE);
    if (!done) {
      p = &(*p)->next;
      continue;
    }
    pending_send *s = *p;
    *p = s->next;
    if (s->cap > 0)
      give_buffer(s->buf, s->cap);
    else
      free(s->buf);
    free(s->req);
    free(s);
  }
}

static void cancel_all(void) {
  for (pending_send *s = D.pending, *next; s; s = next) {
    next = s->next;
    for (int i = 0; i < s->n_req; i++) {
      if (s->req[i] == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&s->req[i]);
      MPI_Request_free(&s->req[i]);
    }
    free(s->buf);
    free(s->req);
    free(s);
  }
  D.pending = NULL;
  if (D.abort_req != MPI_REQUEST_NULL) {
    MPI_Cancel(&D.abort_req);
    MPI_Wait(&D.abort_req, MPI_STATUS_IGNORE);
  }
}

void ppcc_mpi_finalize(ppcc_status status) {
  if (!D.initialized) return;
  fflush(stdout);
  fflush(stderr);
  pthread_mutex_lock(&D.lock);
  if (status != PPCC_OK) {
    cancel_all();
  } else {
    double t0 = now_s();
    for (long spins = 0; D.pending && now_s() - t0 < D.timeout_s; spins++) {
      reap_sends();
      pthread_mutex_unlock(&D.lock);
      pause_briefly(spins);
      pthread_mutex_lock(&D.lock);
    }
    cancel_all();
  }
  free_pool();
  pthread_mutex_unlock(&D.lock);
  MPI_Comm_free(&D.data);
  MPI_Comm_free(&D.control);
  MPI_Comm_free(&D.sync);
  free(D.rank_of);
  D.rank_of = NULL;
  D.active = D.initialized = false;
  /* Every output is written by now: a hanging MPI_Finalize only delays the
   * exit, with the run's own status. */
  watchdog_arm(EXIT_MARGIN_S, (int)status, "ppcc: rank %d: note: MPI_Finalize did not return within %.0f s; "
               "exiting with the run's status %d", D.rank, EXIT_MARGIN_S, (int)status);
  /* Testing hook (tests/mpi): rank R hangs here as MPICH over UCX's TCP
   * sometimes does inside MPI_Finalize (openucx/ucx#8738). */
  const char *hang = getenv("PPCC_INJECT_FINALIZE_HANG");
  if (hang && atoi(hang) == D.rank)
    for (;;) pause();
  MPI_Finalize();
  watchdog_disarm();
}

ppcc_status ppcc_mpi_distribute(const ppcc_graph *g, const int *rank_of, ppcc_diag *d) {
  if (!D.initialized) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "MPI is not initialized");
  int *tag_ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
  long long needed = (long long)g->n_devices * g->n_devices;
  if (flag && tag_ub && needed > *tag_ub)
    return ppcc_error(d, "%d devices need MPI tags up to %lld, but this MPI allows %d", g->n_devices, needed, *tag_ub);
  free(D.rank_of);
  D.rank_of = malloc(sizeof(int) * (size_t)g->n_devices);
  if (!D.rank_of) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  memcpy(D.rank_of, rank_of, sizeof(int) * (size_t)g->n_devices);
  D.n_devices = g->n_devices;
  pthread_mutex_lock(&D.lock);
  D.remote_failed = D.broadcast_done = false;
  D.silent_rank = -1;
  if (D.abort_req == MPI_REQUEST_NULL)
    MPI_Irecv(&D.abort_in, (int)sizeof D.abort_in, MPI_BYTE, MPI_ANY_SOURCE, TAG_ABORT, D.control, &D.abort_req);
  pthread_mutex_unlock(&D.lock);
  D.active = true;
  return PPCC_OK;
}

bool rt_dist_active(void) { return D.active; }
bool rt_dist_local(int dev) { return !D.active || dev < 0 || dev >= D.n_devices || D.rank_of[dev] == D.rank; }
int rt_dist_rank(void) { return D.active ? D.rank : 0; }
int rt_dist_rank_of(int dev) { return D.active && dev >= 0 && dev < D.n_devices ? D.rank_of[dev] : 0; }

int rt_dist_local_devices(void) {
  int n = 0;
  for (int dev = 0; D.active && dev < D.n_devices; dev++) n += D.rank_of[dev] == D.rank;
  return n;
}

int rt_dist_rank_cores(void) {
  int cores = omp_get_num_procs() / (D.host_ranks > 0 ? D.host_ranks : 1);
  return cores > 1 ? cores : 1;
}

int rt_dist_collector(void) {
  for (int dev = 0; D.active && dev < D.n_devices; dev++)
    if (D.rank_of[dev] == 0) return dev;
  return 0;
}

bool rt_dist_holds_value(const ppcc_graph *g, int v) {
  const ppcc_value *p = &g->values[v];
  if (!D.active || !p->devices) return true;
  for (int i = 0; i < p->layout.count; i++)
    if (rt_dist_local(p->devices[i])) return true;
  return false;
}

/* ---------------- aborts ---------------- */

/* Called with the lock held. */
static void take_remote_abort(void) {
  if (D.abort_req == MPI_REQUEST_NULL) return;
  int done = 0;
  MPI_Test(&D.abort_req, &done, MPI_STATUS_IGNORE);
  if (!done) return;
  if (!D.remote_failed) {
    D.remote = D.abort_in;
    D.remote.text[ABORT_TEXT - 1] = 0;
    D.remote_failed = true;
  }
  /* more aborts may come (several ranks failing at once): keep listening */
  MPI_Irecv(&D.abort_in, (int)sizeof D.abort_in, MPI_BYTE, MPI_ANY_SOURCE, TAG_ABORT, D.control, &D.abort_req);
}

void rt_dist_poll(void) {
  if (!D.active) return;
  if (pthread_mutex_trylock(&D.lock) != 0) return; /* another thread is polling */
  reap_sends();
  take_remote_abort();
  bool failed = D.remote_failed;
  abort_msg m = D.remote;
  ppcc_rt_comm *c = D.comm;
  pthread_mutex_unlock(&D.lock);
  if (failed && c && !ppcc_rt_aborted(c)) rt_comm_remote_abort(c, m.device, m.text);
}

void rt_dist_broadcast_abort(int device, const char *message) {
  if (!D.active) return;
  pthread_mutex_lock(&D.lock);
  take_remote_abort();
  if (!D.broadcast_done && !D.remote_failed) {
    D.broadcast_done = true;
    pending_send *s = calloc(1, sizeof *s);
    abort_msg *m = calloc(1, sizeof *m);
    MPI_Request *req = calloc((size_t)D.size, sizeof *req);
    if (s && m && req) {
      m->device = device;
      snprintf(m->text, sizeof m->text, "%s", message ? message : "failed");
      s->buf = m, s->req = req;
      for (int r = 0; r < D.size; r++)
        if (r != D.rank) MPI_Isend(m, (int)sizeof *m, MPI_BYTE, r, TAG_ABORT, D.control, &req[s->n_req++]);
      s->next = D.pending;
      D.pending = s;
    } else {
      free(s), free(m), free(req);
    }
  }
  pthread_mutex_unlock(&D.lock);
}

/* Aborts c: "device DEV: WHAT: device PEER (rank R) WHY". */
static int fail(ppcc_rt_comm *c, int dev, const char *what, int peer, const char *why) {
  char msg[512];
  snprintf(msg, sizeof msg, "device %d: %s: device %d (rank %d) %s", dev, what, peer, D.rank_of[peer], why);
  ppcc_rt_abort(c, dev, msg);
  return -1;
}

/* ---------------- point to point ---------------- */

static int n_chunks(int64_t bytes) { return bytes <= 0 ? 1 : (int)((bytes + CHUNK_BYTES - 1) / CHUNK_BYTES); }
static int chunk_len(int64_t bytes, int k) {
  int64_t left = bytes - (int64_t)k * CHUNK_BYTES;
  return (int)(left < CHUNK_BYTES ? left : CHUNK_BYTES);
}
static int tag_of(int src, int dst) { return src * D.n_devices + dst; }

int rt_dist_send(ppcc_rt_comm *c, int self, int dst, const void *buf, int64_t bytes) {
  if (ppcc_rt_aborted(c)) return -1;
  int n = n_chunks(bytes);
  pending_send *s = calloc(1, sizeof *s);
  MPI_Request *req = calloc((size_t)n, sizeof *req);
  int64_t cap = 0;
  pthread_mutex_lock(&D.lock);
  void *copy = take_buffer(bytes, &cap);
  pthread_mutex_unlock(&D.lock);
  if (!s || !copy || !req) {
    free(s), free(copy), free(req);
    ppcc_rt_abort(c, self, "send: out of memory");
    return -1;
  }
  if (bytes > 0) memcpy(copy, buf, (size_t)bytes);
  s->buf = copy, s->req = req, s->n_req = n, s->cap = cap;
  int rc = MPI_SUCCESS;
  pthread_mutex_lock(&D.lock);
  for (int k = 0; k < n && rc == MPI_SUCCESS; k++)
    rc = MPI_Isend((char *)copy + (int64_t)k * CHUNK_BYTES, chunk_len(bytes, k), MPI_BYTE, D.rank_of[dst],
                   tag_of(self, dst), D.data, &req[k]);
  s->next = D.pending;
  D.pending = s;
  pthread_mutex_unlock(&D.lock);
  if (rc != MPI_SUCCESS) return fail(c, self, "send", dst, "cannot be reached (MPI_Isend failed)");
  rt_dist_poll();
  return 0;
}

int rt_dist_recv(ppcc_rt_comm *c, int self, int src, void *buf, int64_t bytes) {
  int n = n_chunks(bytes);
  MPI_Request *req = calloc((size_t)n, sizeof *req);
  MPI_Status *sts = calloc((size_t)n, sizeof *sts);
  if (!req || !sts) {
    free(req), free(sts);
    ppcc_rt_abort(c, self, "recv: out of memory");
    return -1;
  }
  int rc = MPI_SUCCESS, done = 0;
  pthread_mutex_lock(&D.lock);
  for (int k = 0; k < n && rc == MPI_SUCCESS; k++)
    rc = MPI_Irecv((char *)buf + (int64_t)k * CHUNK_BYTES, chunk_len(bytes, k), MPI_BYTE, D.rank_of[src],
                   tag_of(src, self), D.data, &req[k]);
  pthread_mutex_unlock(&D.lock);
  double t0 = now_s();
  for (long spins = 0; rc == MPI_SUCCESS; spins++) {
    pthread_mutex_lock(&D.lock);
    rc = MPI_Testall(n, req, &done, sts);
    pthread_mutex_unlock(&D.lock);
    if (rc != MPI_SUCCESS || done) break;
    rt_dist_poll();
    if (ppcc_rt_aborted(c)) break;
    if (now_s() - t0 > D.timeout_s) {
      char why[160];
      snprintf(why, sizeof why, "sent nothing for %.0f s (PPCC_MPI_TIMEOUT); is that rank alive?", now_s() - t0);
      fail(c, self, "waiting for a message", src, why);
      pthread_mutex_lock(&D.lock);
      if (D.silent_rank < 0) D.silent_rank = D.rank_of[src];
      pthread_mutex_unlock(&D.lock);
      break;
    }
    pause_briefly(spins);
  }
  if (!done) { /* aborted, timed out or an MPI error: withdraw the receives */
    pthread_mutex_lock(&D.lock);
    for (int k = 0; k < n; k++)
      if (req[k] != MPI_REQUEST_NULL) {
        MPI_Cancel(&req[k]);
        MPI_Request_free(&req[k]);
      }
    pthread_mutex_unlock(&D.lock);
  }
  int64_t got = 0;
  for (int k = 0; done && rc == MPI_SUCCESS && k < n; k++) {
    int count = 0;
    MPI_Get_count(&sts[k], MPI_BYTE, &count);
    got += count;
  }
  free(req);
  free(sts);
  if (!done && rc == MPI_SUCCESS) return -1;
  if (rc != MPI_SUCCESS || got != bytes) {
    char msg[256];
    snprintf(msg, sizeof msg, "message size mismatch: device %d (rank %d) sent %s%lld bytes, device %d expected %lld",
             src, D.rank_of[src], rc != MPI_SUCCESS ? "more than " : "", (long long)got, self, (long long)bytes);
    ppcc_rt_abort(c, self, msg);
    return -1;
  }
  return 0;
}

/* ---------------- run-wide steps ---------------- */

/* Polls a request until it completes, the comm aborts (c not NULL) or the
 * timeout; returns 1 done, 0 aborted, -1 timed out. */
static int wait_request(MPI_Request *req, ppcc_rt_comm *c, void *out_status) {
  double t0 = now_s();
  for (long spins = 0;; spins++) {
    int done = 0;
    pthread_mutex_lock(&D.lock);
    MPI_Test(req, &done, out_status ? (MPI_Status *)out_status : MPI_STATUS_IGNORE);
    pthread_mutex_unlock(&D.lock);
    if (done) return 1;
    rt_dist_poll();
    if (c && ppcc_rt_aborted(c)) return 0;
    if (now_s() - t0 > D.timeout_s) return -1;
    pause_briefly(spins);
  }
}

/* Ends every rank: MPI_Abort, or the watchdog where MPI_Abort cannot reach
 * mpiexec (this rank is cut off). who names the silent ranks. */
static void give_up(const char *what, const char *who) {
  fprintf(stderr, "ppcc: rank %d: error: %s: no answer from %s for %.0f s (PPCC_MPI_TIMEOUT); "
                  "ending every rank\n", D.rank, what, who, D.timeout_s);
  fflush(stderr);
  watchdog_arm(EXIT_MARGIN_S, 1, "ppcc: rank %d: error: MPI_Abort did not return within %.0f s (mpiexec cannot "
               "be reached from here); exiting", D.rank, EXIT_MARGIN_S);
  /* stderr is a pipe to the launcher, which kills every rank as soon as
   * MPI_Abort reaches it: give it time to forward the line above first */
  nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Every rank sends `mine` to every other rank on comm with tag and
 * receives theirs; returns the largest. A rank that does not answer
 * within the timeout ends the job, named in the message. */
static int exchange_all(MPI_Comm comm, int tag, int mine, const char *what) {
  int n = D.size, largest = mine;
  int *theirs = calloc((size_t)n, sizeof *theirs);
  MPI_Request *req = calloc((size_t)(2 * n), sizeof *req);
  MPI_Status *sts = calloc((size_t)(2 * n), sizeof *sts);
  if (!theirs || !req || !sts) {
    free(theirs), free(req), free(sts);
    give_up(what, "(out of memory)");
    return 1;
  }
  pthread_mutex_lock(&D.lock);
  for (int r = 0; r < n; r++) {
    req[r] = req[n + r] = MPI_REQUEST_NULL;
    if (r == D.rank) continue;
    MPI_Irecv(&theirs[r], 1, MPI_INT, r, tag, comm, &req[r]);
    MPI_Isend(&mine, 1, MPI_INT, r, tag, comm, &req[n + r]);
  }
  pthread_mutex_unlock(&D.lock);
  double t0 = now_s();
  for (long spins = 0;; spins++) {
    int done = 0;
    pthread_mutex_lock(&D.lock);
    MPI_Testall(2 * n, req, &done, sts);
    pthread_mutex_unlock(&D.lock);
    if (done) break;
    rt_dist_poll();
    if (now_s() - t0 > D.timeout_s) {
      char who[256] = "rank";
      size_t used = strlen(who);
      int silent = 0;
      for (int r = 0; r < n; r++)
        if (req[r] != MPI_REQUEST_NULL && used + 16 < sizeof who) {
          used += (size_t)snprintf(who + used, sizeof who - used, "%s %d", silent++ ? "," : "", r);
        }
      give_up(what, silent ? who : "the other ranks");
    }
    pause_briefly(spins);
  }
  for (int r = 0; r < n; r++)
    if (r != D.rank && theirs[r] > largest) largest = theirs[r];
  free(theirs), free(req), free(sts);
  return largest;
}

/* ---------------- links between ranks (ppcc calibrate --links) ---------------- */

/* Sends (or receives) bytes to (from) peer on the control communicator;
 * a peer silent for PPCC_MPI_TIMEOUT ends the job, named. */
static void link_xfer(void *buf, int bytes, int peer, bool send) {
  MPI_Request req;
  pthread_mutex_lock(&D.lock);
  if (send) MPI_Isend(buf, bytes, MPI_BYTE, peer, TAG_LINK, D.control, &req);
  else MPI_Irecv(buf, bytes, MPI_BYTE, peer, TAG_LINK, D.control, &req);
  pthread_mutex_unlock(&D.lock);
  if (wait_request(&req, NULL, NULL) != 1) {
    char who[32];
    snprintf(who, sizeof who, "rank %d", peer);
    give_up("measuring links", who);
  }
}

/* Ranks a < b: latency = the median of 15 one-byte round trips / 2;
 * bandwidth = the best of 3 one-way sends of `bytes` (each answered by one
 * byte) after the two latencies are taken off. Measured on rank a. */
static void measure_pair(int a, int b, char *buf, int bytes, double *bw, double *lat) {
  bool first = D.rank == a;
  int peer = first ? b : a;
  double rtt[15];
  for (int i = -1; i < 15; i++) { /* i = -1: warm-up */
    double t0 = now_s();
    link_xfer(buf, 1, peer, first);
    link_xfer(buf, 1, peer, !first);
    if (i >= 0) rtt[i] = now_s() - t0;
  }
  for (int i = 1; i < 15; i++) /* insertion sort: the median */
    for (int j = i; j > 0 && rtt[j] < rtt[j - 1]; j--) {
      double t = rtt[j];
      rtt[j] = rtt[j - 1], rtt[j - 1] = t;
    }
  *lat = rtt[7] / 2;
  *bw = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now_s();
    link_xfer(buf, bytes, peer, first);
    link_xfer(buf, 1, peer, !first);
    double t = now_s() - t0 - 2 * *lat;
    if (t > 0 && bytes / t > *bw) *bw = bytes / t;
  }
}

ppcc_status ppcc_mpi_measure_links(int bytes, double *bytes_per_s, double *latency_s, ppcc_diag *d) {
  int n = D.size;
  char *buf = calloc((size_t)(bytes > 1 ? bytes : 1), 1);
  if (!buf) give_up("measuring links", "(out of memory)");
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++) {
      double result[2] = {0, 0}; /* bandwidth, latency */
      if (D.rank == a || D.rank == b) measure_pair(a, b, buf, bytes, &result[0], &result[1]);
      if (a != 0 && D.rank == a) link_xfer(result, (int)sizeof result, 0, true);
      if (a != 0 && D.rank == 0) link_xfer(result, (int)sizeof result, a, false);
      if (D.rank == 0) bytes_per_s[a * n + b] = result[0], latency_s[a * n + b] = result[1];
    }
  free(buf);
  (void)d;
  return PPCC_OK;
}

/* Every rank calls it exactly once per run, failed or not (the executor
 * after loading, ppcc_run when loading failed), so it is never abandoned.
 * When every rank is on this host, they share its monotonic clock (that of
 * omp_get_wtime): all take rank 0's origin, so the merged trace lines up
 * exactly; across hosts each rank starts its clock as it leaves the barrier. */
void rt_dist_sync(double *t0) {
  if (!D.active) return;
  exchange_all(D.sync, TAG_SYNC, 0, "waiting for every rank to load");
  double origin = omp_get_wtime();
  if (D.host_ranks == D.size) {
    MPI_Request req;
    pthread_mutex_lock(&D.lock);
    MPI_Ibcast(&origin, 1, MPI_DOUBLE, 0, D.sync, &req);
    pthread_mutex_unlock(&D.lock);
    if (wait_request(&req, NULL, NULL) < 0) give_up("waiting for every rank to load", "rank 0");
  }
  if (t0) *t0 = origin;
}

ppcc_status rt_dist_agree(ppcc_status st, ppcc_diag *d) {
  if (!D.active) return st;
  int failed = st != PPCC_OK;
  if (failed) { /* unless another rank's abort made this one fail */
    char msg[ABORT_TEXT + 32];
    snprintf(msg, sizeof msg, "rank %d: %s", D.rank, d->first);
    rt_dist_broadcast_abort(-1, msg);
  }
  pthread_mutex_lock(&D.lock);
  int silent = D.silent_rank;
  pthread_mutex_unlock(&D.lock);
  /* This rank already waited one timeout for a silent rank: waiting for the
   * agreement too would double the time a fault takes to end the job. */
  if (silent >= 0) {
    char who[32];
    snprintf(who, sizeof who, "rank %d", silent);
    give_up("running", who);
  }
  int any = exchange_all(D.control, TAG_AGREE, failed, "agreeing on the result");
  if (failed || !any) return st;
  /* another rank failed: its abort message is on the way */
  double t0 = now_s();
  for (long spins = 0; now_s() - t0 < 10; spins++) {
    rt_dist_poll();
    pthread_mutex_lock(&D.lock);
    bool have = D.remote_failed;
    abort_msg m = D.remote;
    pthread_mutex_unlock(&D.lock);
    if (have) return ppcc_error(d, "%s", m.text);
    pause_briefly(spins);
  }
  return ppcc_error(d, "another rank failed");
}

void ppcc_mpi_broadcast(void *buf, int64_t bytes) {
  if (!D.active) return;
  MPI_Request req;
  pthread_mutex_lock(&D.lock);
  MPI_Ibcast(buf, (int)bytes, MPI_BYTE, 0, D.sync, &req);
  pthread_mutex_unlock(&D.lock);
  if (wait_request(&req, NULL, NULL) < 0) give_up("waiting for rank 0's next step", "rank 0");
}

void ppcc_mpi_gather(const double *mine, int n, double *all) {
  if (!D.active) {
    for (int i = 0; all && i < n; i++) all[i] = mine[i];
    return;
  }
  /* rank 0 without room (out of memory) still takes part */
  double *spare = D.rank == 0 && !all ? malloc(sizeof *spare * (size_t)n * (size_t)D.size) : NULL;
  if (D.rank == 0 && !all && !spare) give_up("gathering every rank's figures", "(out of memory)");
  MPI_Request req;
  pthread_mutex_lock(&D.lock);
  MPI_Igather(mine, n, MPI_DOUBLE, all ? all : spare, n, MPI_DOUBLE, 0, D.sync, &req);
  pthread_mutex_unlock(&D.lock);
  if (wait_request(&req, NULL, NULL) < 0) give_up("gathering every rank's figures", "the other ranks");
  free(spare);
}

/* One device's track: counts, then spans, then flows. */
ppcc_status rt_dist_merge_timeline(rt_timeline *t, ppcc_diag *d) {
  if (!D.active) return PPCC_OK;
  /* blocking sends and receives: bounded by the watchdog */
  watchdog_arm(D.timeout_s + EXIT_MARGIN_S, 1, "ppcc: rank %d: error: gathering the trace: no answer for %.0f s "
               "(PPCC_MPI_TIMEOUT + %.0f s); exiting", D.rank, D.timeout_s + EXIT_MARGIN_S, EXIT_MARGIN_S);
  for (int dev = 0; dev < t->n_devices && dev < D.n_devices; dev++) {
    int owner = D.rank_of[dev];
    rt_device_timeline *dt = &t->dev[dev];
    if (owner == 0 && D.rank == 0) continue;
    if (D.rank == owner) {
      int counts[2] = {dt->n_spans, dt->n_flows};
      MPI_Send(counts, 2, MPI_INT, 0, TAG_TIMELINE, D.control);
      MPI_Send(dt->spans, (int)(sizeof *dt->spans) * dt->n_spans, MPI_BYTE, 0, TAG_TIMELINE, D.control);
      MPI_Send(dt->flows, (int)(sizeof *dt->flows) * dt->n_flows, MPI_BYTE, 0, TAG_TIMELINE, D.control);
    } else if (D.rank == 0) {
      int counts[2];
      MPI_Recv(counts, 2, MPI_INT, owner, TAG_TIMELINE, D.control, MPI_STATUS_IGNORE);
      rt_span *spans = malloc(sizeof *spans * (size_t)(counts[0] + 1));
      rt_flow_end *flows = malloc(sizeof *flows * (size_t)(counts[1] + 1));
      if (!spans || !flows) {
        free(spans), free(flows);
        watchdog_disarm();
        return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
      }
      MPI_Recv(spans, (int)sizeof *spans * counts[0], MPI_BYTE, owner, TAG_TIMELINE, D.control, MPI_STATUS_IGNORE);
      MPI_Recv(flows, (int)sizeof *flows * counts[1], MPI_BYTE, owner, TAG_TIMELINE, D.control, MPI_STATUS_IGNORE);
      free(dt->spans), free(dt->flows);
      dt->spans = spans, dt->n_spans = dt->cap_spans = counts[0];
      dt->flows = flows, dt->n_flows = dt->cap_flows = counts[1];
    }
  }
  watchdog_disarm();
  return PPCC_OK;
}

/* comm.c calls this from ppcc_rt_comm_new's caller (rt_comm_attach_dist)
 * and when the communicator is freed. */
void rt_dist_bind_comm(ppcc_rt_comm *c) {
  pthread_mutex_lock(&D.lock);
  D.comm = c;
  bool failed = D.remote_failed;
  abort_msg m = D.remote;
  pthread_mutex_unlock(&D.lock);
  if (c && failed) rt_comm_remote_abort(c, m.device, m.text);
}

/* Rank 0 prints every rank's params and peak RSS (getrusage). */
void rt_dist_report_memory(FILE *log, int64_t param_bytes) {
  if (!D.active) return;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double mine[2] = {(double)param_bytes, (double)ru.ru_maxrss * 1024.0}, *all = NULL;
  if (D.rank == 0) all = malloc(sizeof(double) * 2 * (size_t)D.size);
  watchdog_arm(D.timeout_s + EXIT_MARGIN_S, 1, "ppcc: rank %d: error: gathering peak memory: no answer for %.0f s "
               "(PPCC_MPI_TIMEOUT + %.0f s); exiting", D.rank, D.timeout_s + EXIT_MARGIN_S, EXIT_MARGIN_S);
  MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, D.control);
  watchdog_disarm();
  for (int r = 0; all && log && r < D.size; r++)
    fprintf(log, "rank %d: params %.1f MiB, peak RSS %.1f MiB\n", r, all[2 * r] / 1048576.0,
            all[2 * r + 1] / 1048576.0);
  free(all);
}
