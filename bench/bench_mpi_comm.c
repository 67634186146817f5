/* Transfer benchmark (not a test): ping-pong of one shard between device 0
 * and device 1 through ppcc_rt_send/recv, at 4 KiB and 4 MiB.
 *   bench_mpi_comm                 the threaded runtime: two device threads of
 *                                  one process (an in-process copy);
 *   mpiexec -n 2 bench_mpi_comm    the MPI runtime: device 0 on rank 0,
 *                                  device 1 on rank 1 (comm_mpi.c).
 * Prints one line per size: one-way latency (half the round trip; min and
 * median of 5 rounds) and bandwidth. bench/bench_mpi.sh runs both, paired. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/mpi.h"
#include "ppcc/runtime.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* reps round trips on device dev; returns seconds per one-way transfer. */
static double ping_pong(ppcc_rt_comm *c, int dev, char *buf, int64_t bytes, int reps) {
  double t0 = omp_get_wtime();
  for (int r = 0; r < reps; r++) {
    if (dev == 0) {
      if (ppcc_rt_send(c, 0, 1, buf, bytes) || ppcc_rt_recv(c, 0, 1, buf, bytes)) return -1;
    } else {
      if (ppcc_rt_recv(c, 1, 0, buf, bytes) || ppcc_rt_send(c, 1, 0, buf, bytes)) return -1;
    }
  }
  return (omp_get_wtime() - t0) / (2.0 * reps);
}

int main(int argc, char **argv) {
  bool mpi = ppcc_mpi_launched();
  ppcc_diag d;
  ppcc_diag_init(&d, "bench_mpi_comm", stderr);
  int rank = 0;
  if (mpi) {
    if (ppcc_mpi_init(&argc, &argv, &d)) return 1;
    rank = ppcc_mpi_rank();
    ppcc_graph *g = ppcc_graph_new("bench", 2);
    int rank_of[2] = {0, 1};
    if (!g || ppcc_mpi_size() != 2 || ppcc_mpi_distribute(g, rank_of, &d)) {
      fprintf(stderr, "bench_mpi_comm: run with mpiexec -n 2\n");
      ppcc_mpi_finalize(PPCC_ERR_USER);
      return 1;
    }
    ppcc_graph_free(g);
  }
  const int64_t sizes[2] = {4096, 4 << 20};
  const int reps[2] = {2000, 40};
  for (int s = 0; s < 2; s++) {
    int64_t bytes = sizes[s];
    double t[5];
    for (int round = 0; round < 5; round++) {
      ppcc_rt_comm *c = mpi ? ppcc_mpi_comm_new(2) : ppcc_rt_comm_new(2);
      if (!c) return 1;
      double dt = -1;
      if (mpi) {
        char *buf = calloc(1, (size_t)bytes);
        ping_pong(c, rank, buf, bytes, reps[s] / 10); /* warm-up */
        dt = ping_pong(c, rank, buf, bytes, reps[s]);
        free(buf);
      } else {
        double dts[2];
#pragma omp parallel num_threads(2)
        {
          char *buf = calloc(1, (size_t)bytes);
          int dev = omp_get_thread_num();
          ping_pong(c, dev, buf, bytes, reps[s] / 10);
#pragma omp barrier
          dts[dev] = ping_pong(c, dev, buf, bytes, reps[s]);
          free(buf);
        }
        dt = dts[0];
      }
      ppcc_rt_comm_free(c);
      if (dt < 0) return 1;
      t[round] = dt;
    }
    qsort(t, 5, sizeof t[0], cmp_double);
    if (rank == 0)
      printf("%-8s %7lld bytes: one-way latency min %9.2f us median %9.2f us, bandwidth %8.1f MiB/s (min time)\n",
             mpi ? "mpi" : "threaded", (long long)bytes, t[0] * 1e6, t[2] * 1e6, bytes / t[0] / 1048576.0);
  }
  if (mpi) ppcc_mpi_finalize(PPCC_OK);
  return 0;
}
