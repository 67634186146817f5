/* Distributed runs in a ppcc built without MPI (CMake found none): one
 * process holds every device, and asking for MPI is a clear error.
 * The MPI build uses comm_mpi.c instead of this file. */
#include "ppcc/mpi.h"
#include "comm.h"

bool ppcc_mpi_available(void) { return false; }
bool ppcc_mpi_initialized(void) { return false; }
int ppcc_mpi_rank(void) { return 0; }
int ppcc_mpi_size(void) { return 1; }

ppcc_status ppcc_mpi_init(int *argc, char ***argv, ppcc_diag *d) {
  return ppcc_error(d, "this ppcc was built without MPI (install libmpich-dev or Open MPI and rebuild)");
}

void ppcc_mpi_finalize(ppcc_status status) {}

ppcc_status ppcc_mpi_measure_links(int bytes, double *bytes_per_s, double *latency_s, ppcc_diag *d) {
  return ppcc_error(d, "this ppcc was built without MPI");
}

ppcc_status ppcc_mpi_distribute(const ppcc_graph *g, const int *rank_of, ppcc_diag *d) {
  return ppcc_error(d, "this ppcc was built without MPI");
}

void ppcc_mpi_broadcast(void *buf, int64_t bytes) {}

void ppcc_mpi_gather(const double *mine, int n, double *all) {
  for (int i = 0; all && i < n; i++) all[i] = mine[i];
}

bool rt_dist_active(void) { return false; }
bool rt_dist_local(int dev) { return true; }
int rt_dist_rank(void) { return 0; }
int rt_dist_rank_of(int dev) { return 0; }
int rt_dist_collector(void) { return 0; }
bool rt_dist_holds_value(const ppcc_graph *g, int v) { return true; }
void rt_dist_bind_comm(ppcc_rt_comm *c) {}
int rt_dist_send(ppcc_rt_comm *c, int self, int dst, const void *buf, int64_t bytes) { return -1; }
int rt_dist_recv(ppcc_rt_comm *c, int self, int src, void *buf, int64_t bytes) { return -1; }
void rt_dist_broadcast_abort(int device, const char *message) {}
void rt_dist_poll(void) {}
void rt_dist_sync(double *t0) {}
ppcc_status rt_dist_agree(ppcc_status st, ppcc_diag *d) { return st; }
ppcc_status rt_dist_merge_timeline(rt_timeline *t, ppcc_diag *d) { return PPCC_OK; }
void rt_dist_report_memory(FILE *log, int64_t param_bytes) {}
int rt_dist_local_devices(void) { return 0; }
int rt_dist_rank_cores(void) { return 1; }
