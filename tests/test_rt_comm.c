/* The communication ABI: point-to-point order, every collective with 1-4
 * devices and with more devices than cores, determinism, and aborts that
 * wake waiting devices. */
#include <omp.h>
#include <sched.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include "../src/runtime/comm/comm.h"
#include "ppcc/runtime.h"
#include "test_support.h"

/* Runs fn(dev, ctx) on n OpenMP threads, one per device. */
typedef void (*device_fn)(int dev, void *ctx);
static void on_devices(int n, device_fn fn, void *ctx) {
  omp_set_dynamic(0);
  int started = 0;
#pragma omp parallel num_threads(n)
  {
#pragma omp single
    started = omp_get_num_threads();
    fn(omp_get_thread_num(), ctx);
  }
  ck_assert_int_eq(started, n);
}

/* Distinct values per device and element; exact in f32 sums. */
static float contribution(int shard, int64_t j) { return (float)((shard + 1) * 1000 + j % 97); }

typedef struct p2p_ctx {
  ppcc_rt_comm *c;
  int got[3], rc;
} p2p_ctx;

static void p2p_device(int dev, void *arg) {
  p2p_ctx *x = arg;
  for (int k = 0; k < 3; k++) {
    int rc = dev == 0 ? ppcc_rt_send(x->c, 0, 1, &k, sizeof k) : ppcc_rt_recv(x->c, 1, 0, &x->got[k], sizeof(int));
    if (rc) {
#pragma omp atomic
      x->rc++;
    }
  }
}

START_TEST(send_recv_keeps_order) {
  p2p_ctx x = {.c = ppcc_rt_comm_new(2)};
  on_devices(2, p2p_device, &x);
  ck_assert_int_eq(x.rc, 0);
  for (int k = 0; k < 3; k++) ck_assert_int_eq(x.got[k], k);
  ppcc_rt_comm_free(x.c);
}
END_TEST

/* Every send calls the wait hook (the executors park the sender's kernel
 * workers there, so that they do not spin on the cores the receiver is
 * about to compute on); a receive calls it only when it has to wait. */
static atomic_int hook_calls;
static void count_hook(void) { atomic_fetch_add(&hook_calls, 1); }

START_TEST(send_calls_the_wait_hook) {
  atomic_store(&hook_calls, 0);
  rt_comm_set_wait_hook(count_hook);
  p2p_ctx x = {.c = ppcc_rt_comm_new(2)};
  on_devices(2, p2p_device, &x);
  rt_comm_set_wait_hook(NULL);
  ck_assert_int_eq(x.rc, 0);
  for (int k = 0; k < 3; k++) ck_assert_int_eq(x.got[k], k);
  ck_assert_int_ge(atomic_load(&hook_calls), 3);
  ck_assert_int_le(atomic_load(&hook_calls), 6);
  ppcc_rt_comm_free(x.c);
}
END_TEST

/* One collective run: n devices, shard i on devices[i] (not device i). */
typedef struct coll_ctx {
  ppcc_rt_comm *c;
  int n, dtype;
  int devices[64];
  int64_t count, outer, inner;
  void **in, **out; /* per rank */
  int failures;
} coll_ctx;

static coll_ctx *coll_new(int n, int dtype, int64_t in_count, int64_t out_count) {
  coll_ctx *x = calloc(1, sizeof *x);
  x->c = ppcc_rt_comm_new(n);
  x->n = n;
  x->dtype = dtype;
  x->in = calloc((size_t)n, sizeof(void *));
  x->out = calloc((size_t)n, sizeof(void *));
  for (int i = 0; i < n; i++) {
    x->devices[i] = (i + 1) % n; /* shard i lives on device i+1 */
    x->in[i] = calloc((size_t)(in_count > 0 ? in_count : 1), 8);
    x->out[i] = calloc((size_t)(out_count > 0 ? out_count : 1), 8);
  }
  return x;
}

static void coll_free(coll_ctx *x) {
  for (int i = 0; i < x->n; i++) free(x->in[i]), free(x->out[i]);
  free(x->in), free(x->out);
  ppcc_rt_comm_free(x->c);
  free(x);
}

static int rank_of(const coll_ctx *x, int dev) { return (dev + x->n - 1) % x->n; }

static void count_failure(coll_ctx *x, int rc) {
  if (rc) {
#pragma omp atomic
    x->failures++;
  }
}

static void all_reduce_device(int dev, void *arg) {
  coll_ctx *x = arg;
  int r = rank_of(x, dev);
  count_failure(x, ppcc_rt_all_reduce(x->c, x->devices, x->n, r, x->dtype, x->in[r], x->count));
}

static bool all_reduce_ok(int n, int64_t count) {
  coll_ctx *x = coll_new(n, PPCC_F32, count, 0);
  x->count = count;
  for (int r = 0; r < n; r++)
    for (int64_t j = 0; j < count; j++) ((float *)x->in[r])[j] = contribution(r, j);
  on_devices(n, all_reduce_device, x);
  bool ok = x->failures == 0;
  for (int r = 0; r < n && ok; r++)
    for (int64_t j = 0; j < count; j++) {
      float want = 0;
      for (int s = 0; s < n; s++) want += contribution(s, j);
      ok = ok && ((float *)x->in[r])[j] == want;
    }
  coll_free(x);
  return ok;
}

START_TEST(all_reduce_1_to_4_devices) {
  for (int n = 1; n <= 4; n++) {
    ck_assert_msg(all_reduce_ok(n, 1000), "all_reduce with %d devices", n);
    ck_assert_msg(all_reduce_ok(n, 2), "all_reduce of 2 elements with %d devices", n);
  }
}
END_TEST

START_TEST(all_reduce_more_devices_than_cores) {
  int n = 4 * omp_get_num_procs() + 3;
  ck_assert(all_reduce_ok(n > 64 ? 64 : n, 4096));
}
END_TEST

static void all_gather_device(int dev, void *arg) {
  coll_ctx *x = arg;
  int r = rank_of(x, dev);
  count_failure(x, ppcc_rt_all_gather(x->c, x->devices, x->n, r, PPCC_F32, x->in[r], x->out[r], x->outer, x->inner));
}

/* Full tensor [outer][n*inner]; shard r is the r-th column block. */
static bool all_gather_ok(int n, int64_t outer, int64_t inner) {
  coll_ctx *x = coll_new(n, PPCC_F32, outer * inner, outer * inner * n);
  x->outer = outer;
  x->inner = inner;
  for (int r = 0; r < n; r++)
    for (int64_t o = 0; o < outer; o++)
      for (int64_t k = 0; k < inner; k++) ((float *)x->in[r])[o * inner + k] = (float)(o * 10000 + r * inner + k);
  on_devices(n, all_gather_device, x);
  bool ok = x->failures == 0;
  for (int r = 0; r < n && ok; r++)
    for (int64_t j = 0; j < outer * n * inner; j++)
      ok = ok && ((float *)x->out[r])[j] == (float)(j / (n * inner) * 10000 + j % (n * inner));
  coll_free(x);
  return ok;
}

START_TEST(all_gather_1_to_4_devices) {
  for (int n = 1; n <= 4; n++) ck_assert_msg(all_gather_ok(n, 3, 5), "all_gather with %d devices", n);
  ck_assert(all_gather_ok(20, 2, 3)); /* more devices than cores */
}
END_TEST

static void reduce_scatter_device(int dev, void *arg) {
  coll_ctx *x = arg;
  int r = rank_of(x, dev);
  count_failure(x, ppcc_rt_reduce_scatter(x->c, x->devices, x->n, r, x->dtype, x->in[r], x->out[r], x->outer, x->inner));
}

static bool reduce_scatter_ok(int n, int64_t outer, int64_t inner, int dtype) {
  int64_t full = outer * inner * n;
  coll_ctx *x = coll_new(n, dtype, full, outer * inner);
  x->outer = outer;
  x->inner = inner;
  for (int r = 0; r < n; r++)
    for (int64_t j = 0; j < full; j++) {
      if (dtype == PPCC_I64)
        ((int64_t *)x->in[r])[j] = (int64_t)contribution(r, j);
      else
        ((float *)x->in[r])[j] = contribution(r, j);
    }
  on_devices(n, reduce_scatter_device, x);
  bool ok = x->failures == 0;
  for (int r = 0; r < n && ok; r++)
    for (int64_t o = 0; o < outer; o++)
      for (int64_t k = 0; k < inner; k++) {
        int64_t j = o * n * inner + r * inner + k;
        double want = 0;
        for (int s = 0; s < n; s++) want += contribution(s, j);
        double got = dtype == PPCC_I64 ? (double)((int64_t *)x->out[r])[o * inner + k] : ((float *)x->out[r])[o * inner + k];
        ok = ok && got == want;
      }
  coll_free(x);
  return ok;
}

START_TEST(reduce_scatter_1_to_4_devices) {
  for (int n = 1; n <= 4; n++) {
    ck_assert_msg(reduce_scatter_ok(n, 2, 7, PPCC_F32), "reduce_scatter f32 with %d devices", n);
    ck_assert_msg(reduce_scatter_ok(n, 1, 5, PPCC_I64), "reduce_scatter i64 with %d devices", n);
  }
  ck_assert(reduce_scatter_ok(24, 2, 3, PPCC_F32)); /* more devices than cores */
}
END_TEST

/* Values whose f32 sum depends on the order: every member must still get
 * identical bits, run after run. */
START_TEST(all_reduce_is_deterministic) {
  enum { N = 3, COUNT = 999 };
  float first[COUNT];
  for (int rep = 0; rep < 5; rep++) {
    coll_ctx *x = coll_new(N, PPCC_F32, COUNT, 0);
    x->count = COUNT;
    for (int r = 0; r < N; r++)
      for (int j = 0; j < COUNT; j++) ((float *)x->in[r])[j] = (r == 1 ? 1e8f : 1.0f) * (float)(j + 1) / 3.0f;
    on_devices(N, all_reduce_device, x);
    ck_assert_int_eq(x->failures, 0);
    for (int r = 1; r < N; r++) ck_assert(memcmp(x->in[0], x->in[r], sizeof first) == 0);
    if (rep == 0) memcpy(first, x->in[0], sizeof first);
    ck_assert(memcmp(first, x->in[0], sizeof first) == 0);
    coll_free(x);
  }
}
END_TEST

START_TEST(f16_all_reduce_accumulates_in_f32) {
  enum { N = 4 };
  coll_ctx *x = coll_new(N, PPCC_F16, 8, 0);
  x->count = 8;
  for (int r = 0; r < N; r++)
    for (int j = 0; j < 8; j++) ((uint16_t *)x->in[r])[j] = ppcc_f32_to_f16(0.25f * (float)(j + r));
  on_devices(N, all_reduce_device, x);
  ck_assert_int_eq(x->failures, 0);
  for (int j = 0; j < 8; j++) ck_assert_float_eq(ppcc_f16_to_f32(((uint16_t *)x->in[2])[j]), 0.25f * (float)(4 * j + 6));
  coll_free(x);
}
END_TEST

typedef struct abort_ctx {
  ppcc_rt_comm *c;
  int rc_recv, rc_collective;
} abort_ctx;

static void abort_device(int dev, void *arg) {
  abort_ctx *x = arg;
  if (dev == 0) {
    float v;
    x->rc_recv = ppcc_rt_recv(x->c, 0, 1, &v, sizeof v);
  } else if (dev == 2) {
    int devices[2] = {0, 2};
    float buf[4] = {0};
    x->rc_collective = ppcc_rt_all_reduce(x->c, devices, 2, 1, PPCC_F32, buf, 4); /* device 0 never joins */
  } else {
    ppcc_rt_abort(x->c, 1, "device 1 broke");
  }
}

/* Device 0 blocks in recv, device 2 in a collective; device 1 fails. Both
 * must wake with an error instead of hanging (the timeout catches a hang). */
START_TEST(abort_wakes_waiting_devices) {
  abort_ctx x = {.c = ppcc_rt_comm_new(3)};
  on_devices(3, abort_device, &x);
  ck_assert_int_eq(x.rc_recv, -1);
  ck_assert_int_eq(x.rc_collective, -1);
  const char *msg;
  ck_assert_int_eq(ppcc_rt_comm_error(x.c, &msg), 1);
  ck_assert_str_eq(msg, "device 1 broke");
  float v = 0;
  ck_assert_int_eq(ppcc_rt_send(x.c, 1, 0, &v, sizeof v), -1); /* nothing runs after an abort */
  ppcc_rt_comm_free(x.c);
}
END_TEST

typedef struct mismatch_ctx {
  ppcc_rt_comm *c;
  int rc;
} mismatch_ctx;

static void mismatch_device(int dev, void *arg) {
  mismatch_ctx *x = arg;
  double big = 1;
  float small;
  if (dev == 0)
    ppcc_rt_send(x->c, 0, 1, &big, sizeof big);
  else
    x->rc = ppcc_rt_recv(x->c, 1, 0, &small, sizeof small);
}

START_TEST(size_mismatch_aborts) {
  mismatch_ctx x = {.c = ppcc_rt_comm_new(2)};
  on_devices(2, mismatch_device, &x);
  ck_assert_int_eq(x.rc, -1);
  const char *msg;
  ck_assert_int_ge(ppcc_rt_comm_error(x.c, &msg), 0);
  ck_assert_ptr_nonnull(strstr(msg, "size mismatch"));
  ppcc_rt_comm_free(x.c);
}
END_TEST

/* A receive polls before it sleeps (comm.c, RECV_POLL_US): the sender
 * hands its value over once the receiver has posted (the wait hook runs
 * after that), 100 ms later; the receiver sleeps only when it polls for
 * less than that. */
static atomic_bool posted_flag;
static void note_posted(void) { posted_flag = true; }

typedef struct late_ctx {
  ppcc_rt_comm *c;
  int got, rc;
} late_ctx;

static void late_sender_device(int dev, void *arg) {
  late_ctx *x = arg;
  if (dev == 1) {
    x->rc = ppcc_rt_recv(x->c, 1, 0, &x->got, sizeof x->got);
    return;
  }
  while (!posted_flag) sched_yield();
  nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
  int v = 42;
  if (ppcc_rt_send(x->c, 0, 1, &v, sizeof v)) x->rc = -1;
}

static long late_send_sleeps(double poll_us) {
  late_ctx x = {.c = ppcc_rt_comm_new(2)};
  posted_flag = false;
  rt_comm_set_wait_hook(note_posted);
  rt_comm_set_recv_poll_us(poll_us);
  long before = rt_comm_recv_sleeps();
  on_devices(2, late_sender_device, &x);
  long slept = rt_comm_recv_sleeps() - before;
  rt_comm_set_recv_poll_us(-1);
  rt_comm_set_wait_hook(NULL);
  ck_assert_int_eq(x.rc, 0);
  ck_assert_int_eq(x.got, 42);
  ppcc_rt_comm_free(x.c);
  return slept;
}

START_TEST(recv_polls_before_it_sleeps) {
  ck_assert_int_eq(late_send_sleeps(10e6), 0); /* 10 s of polling: the value came first */
  ck_assert_int_eq(late_send_sleeps(0), 1);    /* no polling: it slept until the value came */
}
END_TEST

int main(void) {
  Suite *s = suite_create("rt_comm");
  TCase *tc = t_add_tcase(s, "comm", 60);
  tcase_add_test(tc, send_recv_keeps_order);
  tcase_add_test(tc, send_calls_the_wait_hook);
  tcase_add_test(tc, all_reduce_1_to_4_devices);
  tcase_add_test(tc, all_reduce_more_devices_than_cores);
  tcase_add_test(tc, all_gather_1_to_4_devices);
  tcase_add_test(tc, reduce_scatter_1_to_4_devices);
  tcase_add_test(tc, all_reduce_is_deterministic);
  tcase_add_test(tc, f16_all_reduce_accumulates_in_f32);
  tcase_add_test(tc, abort_wakes_waiting_devices);
  tcase_add_test(tc, size_mismatch_aborts);
  tcase_add_test(tc, recv_polls_before_it_sleeps);
  return t_run_suite(s);
}
