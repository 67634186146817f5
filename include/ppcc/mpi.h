/* Distributed runs over MPI (DESIGN §10): `mpiexec -n R ppcc run ...`.
 *
 * Every rank runs the same compiled graph but holds only some logical
 * devices (a device -> rank map); the ppcc_rt_* ABI sends shards between
 * devices of different ranks with MPI point-to-point calls in the same
 * order as the threaded runtime, so the collectives built on it sum in the
 * same fixed order and a distributed run is bit-identical to one process.
 * Rank 0 collects the outputs, writes them and the summary; a failure on any
 * rank aborts every rank with the failing rank's message.
 *
 * Implemented in src/runtime/comm/rank_map.c (the map, always built) and
 * src/runtime/comm/comm_mpi.c (built when CMake finds MPI; without it the
 * functions below report that MPI is unavailable). */
#ifndef PPCC_MPI_H
#define PPCC_MPI_H
#include <stdbool.h>
#include "ppcc/graph.h"
#include "ppcc/runtime.h"

/* Whether this ppcc was built with MPI. */
bool ppcc_mpi_available(void);
/* Whether the environment says an MPI launcher (mpiexec/mpirun/srun of
 * MPICH, Open MPI, Intel MPI, PMIx) started this process. */
bool ppcc_mpi_launched(void);

/* MPI_Init_thread with MPI_THREAD_MULTIPLE (device threads talk at once). */
ppcc_status ppcc_mpi_init(int *argc, char ***argv, ppcc_diag *d);
/* Ends MPI; status is the run's exit status (on failure pending messages
 * are cancelled first, so nothing waits for a dead peer). */
void ppcc_mpi_finalize(ppcc_status status);
bool ppcc_mpi_initialized(void);
int ppcc_mpi_rank(void); /* 0 without MPI */
int ppcc_mpi_size(void); /* 1 without MPI */

/* The device -> rank map of g for `ranks` ranks: from spec ("0,0,1,1":
 * one rank id per device, --ranks-map) or, with spec NULL, the default:
 * the devices form groups (devices that share a value's shards, i.e. a
 * tensor-parallel group = one pipeline stage), ordered by their lowest
 * device id, and stage s goes to rank floor(s * ranks / stages), so whole
 * stages are spread as evenly as possible and only stage-boundary transfers
 * cross ranks. User errors (same text on every rank): more ranks than
 * devices, more ranks than stages without a map, a map of the wrong
 * length, naming a rank that does not exist, or giving rank 0 no device
 * (rank 0 collects the outputs). rank_of has g->n_devices entries. */
ppcc_status ppcc_rank_map(const ppcc_graph *g, int ranks, const char *spec, int *rank_of, ppcc_diag *d);

/* Makes the next ppcc_run distributed with this map (after ppcc_mpi_init):
 * this rank loads and runs only devices d with rank_of[d] == its rank. */
ppcc_status ppcc_mpi_distribute(const ppcc_graph *g, const int *rank_of, ppcc_diag *d);

/* `ppcc calibrate --links`: every rank calls it; each pair of ranks a < b
 * measures the link between them (latency: half the median round trip of
 * one byte; bandwidth: the best of 3 one-way sends of `bytes`). On rank 0,
 * entry [a * size + b] of the two arrays (size x size) holds pair (a, b);
 * a rank silent for PPCC_MPI_TIMEOUT ends the job, named. */
ppcc_status ppcc_mpi_measure_links(int bytes, double *bytes_per_s, double *latency_s, ppcc_diag *d);

/* After ppcc_mpi_distribute, for a loop of runs driven by rank 0's
 * results (ppcc generate): rank 0's `bytes` bytes at buf to every rank,
 * and each rank's n doubles gathered on rank 0 into all (size * n, rank
 * order; all is only read on rank 0). Every rank calls them in the same
 * order; a rank that does not answer within PPCC_MPI_TIMEOUT ends the
 * job. Without an active distribution they do nothing but copy mine into
 * all. */
void ppcc_mpi_broadcast(void *buf, int64_t bytes);
void ppcc_mpi_gather(const double *mine, int n, double *all);

/* A communicator (ppcc_rt_comm_new) whose devices on other ranks are
 * reached over MPI after ppcc_mpi_distribute; for tests and benchmarks. */
ppcc_rt_comm *ppcc_mpi_comm_new(int n_devices);

#endif
