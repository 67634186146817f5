/* Door of src/runtime/comm/: the threaded communicator's hooks for
 * distributed runs, and the distributed runtime (comm_mpi.c, or
 * dist_stub.c without MPI). The ppcc_rt_* ABI itself is public
 * (include/ppcc/runtime.h). */
#ifndef PPCC_RT_COMM_H
#define PPCC_RT_COMM_H
#include <stdio.h>
#include "../rt_internal.h"

/* ---- distributed runs (comm_mpi.c, or dist_stub.c without MPI) ---- */

/* Whether ppcc_mpi_distribute made this run distributed. */
bool rt_dist_active(void);
/* Whether device dev runs in this process (always true when not
 * distributed), and this process's rank (0). */
bool rt_dist_local(int dev);
int rt_dist_rank(void);
/* The rank that runs device dev (0 when not distributed). */
int rt_dist_rank_of(int dev);
/* How many devices this rank runs, and the cores it may use by default:
 * the host's cores divided among the ranks on that host. */
int rt_dist_local_devices(void);
int rt_dist_rank_cores(void);
/* The device of rank 0 that receives every remote output shard. */
int rt_dist_collector(void);
/* Whether this rank needs the data of leaf v (a shard of it is local). */
bool rt_dist_holds_value(const ppcc_graph *g, int v);
/* The communicator of the running executor receives other ranks' aborts
 * (NULL: none running). */
void rt_dist_bind_comm(ppcc_rt_comm *c);
/* comm.c: route moves to devices of other ranks through MPI. */
void rt_comm_attach_dist(ppcc_rt_comm *c);
/* comm.c: an abort another rank reported (not reported back). */
void rt_comm_remote_abort(ppcc_rt_comm *c, int device, const char *message);
/* Called by a device thread before ppcc_rt_send hands a value over and
 * before ppcc_rt_recv blocks (the executors set the kernels'
 * rt_pool_park; NULL: nothing). */
void rt_comm_set_wait_hook(void (*before_wait)(void));
/* How long a receive polls before it sleeps (comm.c, RECV_POLL_US; a
 * negative value restores that), and how many receives have slept in
 * this process: for tests. */
void rt_comm_set_recv_poll_us(double us);
long rt_comm_recv_sleeps(void);
/* The cross-rank halves of ppcc_rt_send / ppcc_rt_recv. */
int rt_dist_send(ppcc_rt_comm *c, int self, int dst, const void *buf, int64_t bytes);
int rt_dist_recv(ppcc_rt_comm *c, int self, int src, void *buf, int64_t bytes);
/* Tells every other rank that this one failed (once). */
void rt_dist_broadcast_abort(int device, const char *message);
/* Lets MPI progress and takes in other ranks' aborts. */
void rt_dist_poll(void);
/* Waits until every rank got here and sets *t0 (if not NULL) to the
 * common clock origin (omp_get_wtime). Every rank calls it exactly once
 * per distributed run, also when it failed before running. */
void rt_dist_sync(double *t0);
/* Every rank calls it once per distributed run with its own status; all
 * return failure (with the failing rank's message) if any rank failed. */
ppcc_status rt_dist_agree(ppcc_status st, ppcc_diag *d);
/* After a successful agreement: rank 0's timeline gets every other rank's
 * device tracks (the others send theirs). */
ppcc_status rt_dist_merge_timeline(rt_timeline *t, ppcc_diag *d);
/* After a successful run: rank 0 prints each rank's param bytes (its
 * shards) and peak RSS. */
void rt_dist_report_memory(FILE *log, int64_t param_bytes);

#endif
