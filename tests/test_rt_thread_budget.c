/* The one thread budget (issue 12): how many devices of a pipeline can
 * compute at once (ppcc_concurrent_devices, src/plan/concurrency.c),
 * the kernel threads each then gets, and that two device threads calling
 * the multi-threaded BLAS at the same time get the same bits as alone. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/runtime/exec/exec.h"
#include "../src/runtime/kernels/kernels.h"
#include "ppcc/predict.h"
#include "ppcc/runtime.h"
#include "test_support.h"

START_TEST(pp2_one_microbatch_one_stage_at_a_time) {
  ppcc_graph *g = t_pipeline_graph(1, 2, 8);
  ck_assert_int_eq(g->n_devices, 2);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 1), 1); /* stage 1 waits for stage 0 */
  ck_assert_int_eq(ppcc_concurrent_devices(g, 2), 2);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 4), 2);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(tp2pp2_counts_whole_stage_groups) {
  ppcc_graph *g = t_pipeline_graph(2, 2, 8);
  ck_assert_int_eq(g->n_devices, 4);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 1), 2);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 4), 4);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(pp4_at_most_min_of_microbatches_and_stages) {
  ppcc_graph *g = t_pipeline_graph(1, 4, 8);
  ck_assert_int_eq(g->n_devices, 4);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 1), 1);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 2), 2);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 3), 3);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 8), 4);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(tp_only_all_devices) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/tp_ffn.json", &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 1), 2);
  ppcc_graph_free(g);
}
END_TEST

/* Device 1 computes on its own weight before it receives anything: it
 * runs beside stage 0 even with one microbatch, so both count. */
START_TEST(ungated_work_of_a_later_stage_counts) {
  ppcc_diag d;
  ppcc_graph *g = t_model(2,
                          "{'name': 'w0', 'dtype': 'f32', 'shape': [8, 8], 'devices': [0]},"
                          "{'name': 'w1', 'dtype': 'f32', 'shape': [8, 8], 'devices': [1]}",
                          "{'name': 'x', 'dtype': 'f32', 'shape': [4, 8], 'devices': [0]}",
                          "{'op': 'gelu', 'in': ['w1'], 'out': ['g1']},"
                          "{'op': 'matmul', 'in': ['x', 'w0'], 'out': ['h0']},"
                          "{'op': 'matmul', 'in': ['h0', 'g1'], 'out': ['y']}",
                          "'y'", &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ck_assert_int_eq(ppcc_concurrent_devices(g, 1), 2);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(threads_per_device_never_exceed_cores) {
  ck_assert_int_eq(ppcc_kernel_threads_per_device(2, 1), 2);
  ck_assert_int_eq(ppcc_kernel_threads_per_device(2, 2), 1);
  ck_assert_int_eq(ppcc_kernel_threads_per_device(8, 3), 2);
  ck_assert_int_eq(ppcc_kernel_threads_per_device(2, 4), 1); /* more devices than cores: one each */
  ck_assert_int_eq(ppcc_kernel_threads_per_device(1, 0), 1);
  for (int cores = 1; cores <= 16; cores++)
    for (int busy = 1; busy <= cores; busy++)
      ck_assert_int_le(busy * ppcc_kernel_threads_per_device(cores, busy), cores);
}
END_TEST

/* ---- concurrent BLAS calls from two device threads ---- */

enum { DIM = 192, CALLS = 12 };

typedef struct gemm_job {
  const float *a, *b;
  float *c;
} gemm_job;

static void *gemm_many(void *arg) {
  gemm_job *j = arg;
  for (int k = 0; k < CALLS; k++)
    ppcc_rt_sgemm(DIM, DIM, DIM, j->a + (size_t)k * DIM * DIM, j->b, k % 2 == 1, j->c + (size_t)k * DIM * DIM);
  return NULL;
}

/* Two threads, each a device calling sgemm with 2 kernel threads, at the
 * same time (the case a schedule overlapping more devices than counted
 * would make): every product is the bits it has when computed alone, with
 * a pool each and with one shared pool (rt_pool_share: a call finding it
 * taken runs every part on its caller). */
START_TEST(concurrent_multithreaded_sgemm_same_bits) {
  size_t n = (size_t)CALLS * DIM * DIM;
  float *a[2], *b[2], *alone[2], *together[2];
  for (int t = 0; t < 2; t++) {
    a[t] = malloc(n * sizeof(float));
    b[t] = malloc((size_t)DIM * DIM * sizeof(float));
    alone[t] = malloc(n * sizeof(float));
    together[t] = malloc(n * sizeof(float));
    ck_assert(a[t] && b[t] && alone[t] && together[t]);
    unsigned s = 12345u + (unsigned)t;
    for (size_t i = 0; i < n; i++) a[t][i] = (float)((s = s * 1103515245u + 12345u) >> 16 & 0xff) / 64.0f - 2.0f;
    for (size_t i = 0; i < (size_t)DIM * DIM; i++) b[t][i] = (float)((s = s * 1103515245u + 12345u) >> 16 & 0xff) / 64.0f - 2.0f;
  }
  ppcc_rt_set_kernel_threads(2);
  for (int t = 0; t < 2; t++) {
    gemm_job j = {a[t], b[t], alone[t]};
    gemm_many(&j);
  }
  for (int round = 0; round < 6; round++) {
    rt_pool_share(round % 2 == 1);
    pthread_t th[2];
    gemm_job j[2] = {{a[0], b[0], together[0]}, {a[1], b[1], together[1]}};
    for (int t = 0; t < 2; t++) {
      memset(together[t], 0, n * sizeof(float));
      ck_assert_int_eq(pthread_create(&th[t], NULL, gemm_many, &j[t]), 0);
    }
    for (int t = 0; t < 2; t++) ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    for (int t = 0; t < 2; t++) ck_assert_msg(memcmp(alone[t], together[t], n * sizeof(float)) == 0,
                                              "round %d: thread %d's products differ when run concurrently", round, t);
  }
  rt_pool_share(false);
  ppcc_rt_set_kernel_threads(1);
  for (int t = 0; t < 2; t++) {
    free(a[t]);
    free(b[t]);
    free(alone[t]);
    free(together[t]);
  }
}
END_TEST

/* CPU ticks (utime + stime) of every thread of this process but the
 * caller, from /proc/self/task. */
static long other_threads_ticks(void) {
  char path[320], buf[1024];
  long total = 0;
  pid_t me = (pid_t)syscall(SYS_gettid);
  DIR *dir = opendir("/proc/self/task");
  if (!dir) return -1;
  struct dirent *e;
  while ((e = readdir(dir))) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == me) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* fields after the name: state is 3rd, utime 14th, stime 15th */
    long ut = 0, st = 0;
    if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut, &st) == 2) total += ut + st;
  }
  closedir(dir);
  return total;
}

/* One thread budget: after kernels with 2 kernel threads (a small-row
 * product, a BLAS product, an attention), no other thread keeps a core
 * busy. OpenBLAS's own workers spun ~2^28 cycles after each call (a tenth
 * of a second of a core); the kernels' pool spins 50 us, then sleeps. */
START_TEST(kernel_threads_park_between_calls) {
  enum { M = 64, N = 512, K = 512 };
  float *a = calloc((size_t)M * K, sizeof(float)), *b = calloc((size_t)N * K, sizeof(float));
  float *c = calloc((size_t)M * N, sizeof(float));
  ck_assert(a && b && c);
  ppcc_rt_set_kernel_threads(2);
  bool quiet = false;
  for (int attempt = 0; attempt < 5 && !quiet; attempt++) { /* a loaded machine may delay a worker's sleep */
    for (int r = 0; r < 20; r++) {
      ppcc_rt_sgemm(4, N, K, a, b, true, c);
      ppcc_rt_sgemm(M, N, K, a, b, r % 2, c);
      ck_assert_int_eq(ppcc_rt_attention_f32(1, 4, 16, 32, 2, 64, 32, 0.2, true, 0, 0.0, NULL, false, false, a, b, b, c), 0);
    }
    usleep(20000);
    long before = other_threads_ticks();
    usleep(300000);
    long used = other_threads_ticks() - before;
    ck_assert_int_ge(before, 0);
    quiet = used * 1000 / sysconf(_SC_CLK_TCK) < 30; /* ms of CPU in 300 ms of wall */
  }
  ck_assert_msg(quiet, "kernel threads kept spinning after their calls");
  ppcc_rt_set_kernel_threads(1);
  free(a), free(b), free(c);
}
END_TEST

static int my_cpus(void) {
  cpu_set_t set;
  ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
  return CPU_COUNT(&set);
}

static int my_cpu_if_one(void) {
  cpu_set_t set;
  ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
  if (CPU_COUNT(&set) != 1) return -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

/* Device threads are pinned only between enter and leave: a lone
 * computing device to the first core, spread devices to core d mod cores
 * (of the budget's), nothing when anywhere. A device thread (OpenMP's pool
 * thread, or the caller as device 0) must leave with every core back, or
 * the next parallel region would crowd onto one. */
START_TEST(device_threads_placed_then_released) {
  int all = my_cpus();
  if (all < 2) return; /* nothing to place apart */
  rt_place_threads(RT_PLACE_LONE_DEVICE, 2, 2);
  rt_device_thread_enter(1);
  int lone = my_cpu_if_one();
  ck_assert_int_ge(lone, 0);
  ck_assert_int_eq(sched_getscheduler(0), SCHED_BATCH); /* a device woken on its core does not preempt it */
  rt_device_thread_leave();
  ck_assert_int_eq(my_cpus(), all);
  ck_assert_int_eq(sched_getscheduler(0), SCHED_BATCH); /* kept: switching back costs each forward */
  rt_place_threads(RT_PLACE_SPREAD, 2, 1);
  rt_device_thread_enter(0);
  int c0 = my_cpu_if_one();
  rt_device_thread_leave();
  rt_device_thread_enter(3);
  int c3 = my_cpu_if_one();
  ck_assert_int_eq(sched_getscheduler(0), SCHED_BATCH);
  rt_device_thread_leave();
  rt_device_thread_enter(2);
  int c2 = my_cpu_if_one();
  rt_device_thread_leave();
  ck_assert_int_eq(c0, lone); /* the budget's first core */
  ck_assert_int_ge(c3, 0);
  ck_assert_int_ne(c0, c3);
  ck_assert_int_eq(c2, c0);
  ck_assert_int_eq(my_cpus(), all);
  rt_place_threads(RT_PLACE_ANYWHERE, 2, 1);
  rt_device_thread_enter(1);
  ck_assert_int_eq(my_cpus(), all);
  rt_device_thread_leave();
  ck_assert_int_eq(my_cpus(), all);
}
END_TEST

/* The scheduling policy a fresh thread gets as device 1 under a placement
 * (each placement on a thread of its own: a thread keeps SCHED_BATCH once
 * set, so one thread would carry the first placement's into the next). */
static void *policy_as_device(void *placement) {
  rt_place_threads(*(rt_placement *)placement, 2, 1);
  rt_device_thread_enter(1);
  int policy = sched_getscheduler(0);
  rt_device_thread_leave();
  return (void *)(intptr_t)policy;
}

static int fresh_thread_policy(rt_placement how) {
  pthread_t th;
  void *policy = NULL;
  ck_assert_int_eq(pthread_create(&th, NULL, policy_as_device, &how), 0);
  ck_assert_int_eq(pthread_join(th, &policy), 0);
  return (int)(intptr_t)policy;
}

/* Pinned device threads (a lone device, devices spread over the cores)
 * run as SCHED_BATCH, so a device woken on a computing one's core waits
 * for it (affinity.c, batch_once); threads left to the scheduler keep the
 * usual policy. */
START_TEST(pinned_device_threads_run_as_batch) {
  if (my_cpus() < 2) return; /* nothing is pinned on one core */
  ck_assert_int_eq(fresh_thread_policy(RT_PLACE_LONE_DEVICE), SCHED_BATCH);
  ck_assert_int_eq(fresh_thread_policy(RT_PLACE_SPREAD), SCHED_BATCH);
  ck_assert_int_eq(fresh_thread_policy(RT_PLACE_ANYWHERE), SCHED_OTHER);
}
END_TEST

/* Whole runs: a 2-stage pipeline with one microbatch (a lone device) and
 * with two (spread), then a plain OpenMP region: every thread has all
 * cores. */
START_TEST(runs_leave_every_thread_on_every_core) {
  int all = my_cpus();
  ppcc_graph *g = t_pipeline_graph(1, 2, 8);
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_run_options ro = {.have_random_seed = true, .random_seed = 3};
  ppcc_run_data data;
  ck_assert_int_eq(ppcc_run_data_load(g, &ro, &data, &d), PPCC_OK);
  for (int m = 1; m <= 2; m++) {
    ppcc_exec_options eo = {.threads = 2, .microbatches = m};
    ppcc_host_tensor out[4] = {{0}};
    ck_assert_int_eq(ppcc_execute(g, &data, &eo, out, NULL, &d), PPCC_OK);
    for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&out[k]);
    ck_assert_int_eq(my_cpus(), all);
    int narrowed = 0;
#pragma omp parallel num_threads(2) reduction(+ : narrowed)
    narrowed += my_cpus() != all;
    ck_assert_int_eq(narrowed, 0);
  }
  ppcc_run_data_free(&data);
  ppcc_graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("thread_budget");
  TCase *tc = t_add_tcase(s, "concurrent_devices", 0);
  tcase_add_test(tc, pp2_one_microbatch_one_stage_at_a_time);
  tcase_add_test(tc, tp2pp2_counts_whole_stage_groups);
  tcase_add_test(tc, pp4_at_most_min_of_microbatches_and_stages);
  tcase_add_test(tc, tp_only_all_devices);
  tcase_add_test(tc, ungated_work_of_a_later_stage_counts);
  tcase_add_test(tc, threads_per_device_never_exceed_cores);
  tc = t_add_tcase(s, "blas", 0);
  tcase_add_test(tc, concurrent_multithreaded_sgemm_same_bits);
  tcase_add_test(tc, kernel_threads_park_between_calls);
  tcase_add_test(tc, device_threads_placed_then_released);
  tcase_add_test(tc, pinned_device_threads_run_as_batch);
  tcase_add_test(tc, runs_leave_every_thread_on_every_core);
  return t_run_suite(s);
}
