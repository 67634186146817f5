/* Where a run's threads go (rt_run_thread_budget decides, per run).
 *
 * One device computing at a time with several kernel threads (one
 * microbatch through a pipeline, or a single device): its thread goes to
 * the first core of the budget and the kernels' workers to the others. Left
 * to the scheduler, a device thread woken by its receive often landed on
 * the core where a BLAS worker spun, and each GEMM's two halves then took
 * turns on one core: in about one forward in five a pipeline stage's
 * linears took twice as long (gen_llama pp4 on 2 cores: 0.60 or 1.05 ms).
 *
 * Several devices computing at once with one kernel thread each: device d
 * goes to core d mod cores, so the devices of a TP group and neighbouring
 * pipeline stages (consecutive numbers) compute on different cores. Left
 * to the scheduler, a woken device thread could queue behind a computing
 * one on its core while the other core idled: the second stage of a
 * 4-stage pipeline with 2 microbatches started only when the first had
 * finished both (wall 2.0 ms instead of 1.4 on 2 cores; TP2PP2 with one
 * microbatch 3.2-3.7 ms instead of 2.0-2.3).
 *
 * Anything else (several devices each with several threads) and MPI runs
 * (ranks on one host share its cores) are left to the scheduler. Every
 * device thread gets the process's cores back when it leaves; a pinned
 * one stays SCHED_BATCH (rt_device_thread_enter). */
#define _GNU_SOURCE
#include <pthread.h>
#include <omp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#include "exec.h"
#include "ppcc/predict.h"
#include "../comm/comm.h"
#include "../kernels/kernels.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cpu_set_t process_cpus; /* the process's CPUs before any pinning */
static int cpu_list[CPU_SETSIZE], n_cpus;
static rt_placement placement;
static int budget_cores;

static void read_process_cpus(void) {
  if (sched_getaffinity(0, sizeof process_cpus, &process_cpus) != 0) return;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &process_cpus)) cpu_list[n_cpus++] = c;
}

void rt_place_threads(rt_placement how, int cores, int blas_threads) {
  pthread_once(&once, read_process_cpus);
  budget_cores = cores < n_cpus ? cores : n_cpus;
  placement = budget_cores >= 2 ? how : RT_PLACE_ANYWHERE;
  (void)blas_threads;
  rt_pool_share(placement == RT_PLACE_LONE_DEVICE); /* one device computes at a time: one set of workers */
  if (n_cpus < 2) return;
  cpu_set_t workers = process_cpus;
  if (placement == RT_PLACE_LONE_DEVICE) {
    CPU_ZERO(&workers);
    for (int k = 1; k < budget_cores; k++) CPU_SET(cpu_list[k], &workers);
  }
  rt_pool_set_worker_cpus(&workers, sizeof workers); /* the kernels' workers (OpenBLAS's stay idle) */
}

/* A pinned device thread is SCHED_BATCH from its first program on: a
 * device woken on its core (by this device's own send) then waits for
 * the core instead of preempting it (Linux's wake-up preemption skips
 * batch tasks), so a device's busy time holds its own work only. Before,
 * ppffn's TP2xPP2 first stage on the JIT (devices 0 and 2 on one of 2
 * cores) measured 0.018 ms instead of 0.006 in 5 runs of 16 (--repeat
 * 40, the median forward): device 2 ran its stage inside device 0's
 * time. With it, none of 16 (0.006-0.008), and the forward's wall
 * 0.09-0.12 ms (median 0.095 over 10 runs) instead of 0.10-0.14 (0.115).
 * The thread keeps the policy: switching back
 * after each program put 25-30 us on each of ppffn's forwards. */
static void batch_once(void) {
  static _Thread_local bool tried; /* refused (a seccomp policy): not asked again each forward */
  if (tried) return;
  tried = true;
  struct sched_param none = {0};
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
}

/* The interpreter calls it before the barrier that releases a forward's
 * devices: a thread moved to its core (pthread_setaffinity_np) lands
 * there as a wake-up and preempts what runs there, so moved after the
 * barrier the waiting device threads of a one-device-per-stage pipeline
 * (RT_PLACE_LONE_DEVICE: all on one core) arrived while the first stage
 * computed. Measured (interp, 2 cores, forward median over 300, paired
 * runs): pp_chain 0.109 -> 0.041 ms, ppffn and tiny_llama -9 %, the
 * larger pipelines unchanged. The JIT's executor pins after its barrier:
 * pinned before it, its forwards were 13 % slower on ppffn (the device
 * threads then spun in the barrier two to a core). */
void rt_device_thread_enter(int dev) {
  if (placement == RT_PLACE_ANYWHERE) return;
  batch_once();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu_list[placement == RT_PLACE_LONE_DEVICE ? 0 : dev % budget_cores], &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

void rt_device_thread_leave(void) {
  if (placement != RT_PLACE_ANYWHERE) pthread_setaffinity_np(pthread_self(), sizeof process_cpus, &process_cpus);
}

void rt_thread_budget(int devices, int per_device, rt_placement how, int cores) {
  ppcc_rt_set_kernel_threads(per_device);
  rt_place_threads(how, cores, per_device);
  omp_set_dynamic(0);
  /* Only the portable GEMMs (no OpenBLAS, or --deterministic's) open a
   * team inside a device thread. */
  omp_set_max_active_levels(per_device > 1 && (!ppcc_rt_have_blas() || rt_row_invariant_matmul()) ? 2 : 1);
}

/* Never more busy threads than cores: at most `busy` devices compute at
 * once (the rest sleep on a receive's condition variable, comm.c), each
 * on its device thread plus its kernel pool's workers (thread_pool.c,
 * parked between calls; OpenBLAS's own stay idle), busy * per_device <=
 * cores. Where a schedule lets more devices overlap than counted, each
 * device still splits its calls its own way, so the results are the same
 * bits (tests/test_rt_thread_budget.c checks concurrent calls). */
void rt_run_thread_budget(const ppcc_graph *g, int microbatches, int cores, int local) {
  int m = rt_row_invariant_matmul() ? (g->n_devices > microbatches ? g->n_devices : microbatches) : microbatches;
  int busy = ppcc_concurrent_devices(g, m);
  if (local < busy) busy = local; /* MPI: only this rank's devices share its cores */
  int per_device = ppcc_kernel_threads_per_device(cores, busy);
  rt_placement how = rt_dist_active()                              ? RT_PLACE_ANYWHERE /* ranks share a host */
                     : ppcc_lone_device(per_device, busy)            ? RT_PLACE_LONE_DEVICE
                     : ppcc_devices_spread(cores, per_device, local) ? RT_PLACE_SPREAD
                                                                     : RT_PLACE_ANYWHERE;
  rt_thread_budget(busy, per_device, how, cores);
  rt_comm_set_wait_hook(rt_pool_park);
}

void rt_finish_gate_wait(rt_finish_gate *gate) {
  /* this device is done: its workers need not spin for a next part, on
   * cores the next forward's first stage needs (one device alone keeps
   * them spinning for its next forward, a decode step's; devices that
   * take turns share workers that no park reaches, on cores of their own) */
  if (omp_get_num_threads() > 1) rt_pool_park();
  pthread_mutex_lock(&gate->lock);
  if (--gate->left <= 0) pthread_cond_broadcast(&gate->cond);
  while (gate->left > 0) pthread_cond_wait(&gate->cond, &gate->lock);
  pthread_mutex_unlock(&gate->lock);
}

/* libgomp's spin in rounds (GOMP_SPINCOUNT): about 10 us by its own
 * estimate of 100000 rounds a ms. Its default is 300000, and 100 where a
 * team has more threads than cores (a set GOMP_SPINCOUNT of 1000 leaves
 * that at 100). Measured (2 cores, --repeat 300, forward median, 3
 * rounds each, interp / JIT): gen_llama decode TP1 PP2 7.0-8.0 / 6.4-7.8
 * ms with the default, 0.32-0.46 / 0.30-0.38 with 1000 (1.0 with 10000);
 * its 32-token PP2 prefill 12-16 / 8.0-8.5 ms against 1.9-2.6 / 1.8-2.2;
 * tiny_llama, ppffn, ppffn_sharktank, pp_chain, tp_ffn, explicit_transfer
 * and the PP4, TP2 and TP2xPP2 decodes unchanged. 0 (or
 * OMP_WAIT_POLICY=passive) put tp_ffn's forward at 0.045 ms instead of
 * 0.028: every barrier then sleeps. */
#define DEVICE_SPIN_ROUNDS "1000"

void ppcc_rt_tame_threads(char **argv) {
  bool blas = rt_blas_env_for_rlimit();
  bool spin = !getenv("GOMP_SPINCOUNT") && !getenv("OMP_WAIT_POLICY") &&
              setenv("GOMP_SPINCOUNT", DEVICE_SPIN_ROUNDS, 1) == 0;
  if (!blas && !spin) return;
  execv("/proc/self/exe", argv);
  if (blas) unsetenv("OPENBLAS_NUM_THREADS"); /* no /proc: carry on as we are */
  if (spin) unsetenv("GOMP_SPINCOUNT");
}
