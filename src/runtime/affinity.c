/* Pinning a lone computing device apart from its BLAS threads.
 *
 * When one device computes at a time with several kernel threads (one
 * microbatch through a pipeline, or a single device: rt_run_thread_budget),
 * its thread and OpenBLAS's worker threads are pinned apart: the device
 * threads to the process's first core, the workers to the others. Left to
 * the scheduler, a device thread woken by its receive often landed on the
 * core where a BLAS worker spun, and each GEMM's two halves then took
 * turns on one core: in about one forward in five a pipeline stage's
 * linears took twice as long (gen_llama pp4 on 2 cores: a stage took
 * 0.60 ms or 1.05 ms), which no cost model can predict. With more than
 * one device computing at once every thread may run anywhere. MPI runs
 * never pin (ranks on one host share its cores). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include "rt_internal.h"
#ifdef PPCC_HAVE_OPENBLAS
#include <cblas.h>
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cpu_set_t process_cpus; /* the process's CPUs before any pinning */
static int first_cpu = -1;     /* -1: fewer than 2 CPUs, never pin */
static bool pinned;            /* this run's devices are pinned */

static void read_process_cpus(void) {
  if (sched_getaffinity(0, sizeof process_cpus, &process_cpus) != 0 || CPU_COUNT(&process_cpus) < 2) return;
  for (int c = 0; c < CPU_SETSIZE && first_cpu < 0; c++)
    if (CPU_ISSET(c, &process_cpus)) first_cpu = c;
}

void rt_pin_blas_apart(bool on, int blas_threads) {
  pthread_once(&once, read_process_cpus);
  pinned = on && first_cpu >= 0;
#ifdef PPCC_HAVE_OPENBLAS
  if (first_cpu < 0) return;
  cpu_set_t workers = process_cpus;
  if (pinned) CPU_CLR(first_cpu, &workers);
  for (int w = 0; w + 1 < blas_threads; w++) openblas_setaffinity(w, sizeof workers, &workers); /* fails harmlessly without the worker */
#else
  (void)blas_threads;
#endif
}

void rt_device_thread_enter(void) {
  if (!pinned) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first_cpu, &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

void rt_device_thread_leave(void) {
  if (pinned) pthread_setaffinity_np(pthread_self(), sizeof process_cpus, &process_cpus);
}
