/* Passes, one file each in passes/, run in order by the pass manager. */
#ifndef PPCC_PASSES_H
#define PPCC_PASSES_H
#include "ppcc/graph.h"

/* Verifier + shape inference: defined-before-use, single definition, arity,
 * attribute schema, dtypes, shapes. */
ppcc_status ppcc_pass_verify(ppcc_graph *g, ppcc_diag *d);
/* With a partition request on the graph (--pp/--tp): Megatron layouts,
 * the optimal pipeline split and the placement of params and inputs
 * (include/ppcc/partition.h). No-op otherwise. */
ppcc_status ppcc_pass_auto_partition(ppcc_graph *g, ppcc_diag *d);
/* Layouts of every op result from the op table's sharding rules. */
ppcc_status ppcc_pass_shard_propagate(ppcc_graph *g, ppcc_diag *d);
/* Devices and pinned flags, rules P1-P10; records needed moves. */
ppcc_status ppcc_pass_pin_propagate(ppcc_graph *g, ppcc_diag *d);
/* Materialises every cross-device move as a transfer op (P10). */
ppcc_status ppcc_pass_insert_transfers(ppcc_graph *g, ppcc_diag *d);

typedef ppcc_status (*ppcc_pass_fn)(ppcc_graph *g, ppcc_diag *d);
typedef struct { const char *name; ppcc_pass_fn run; } ppcc_pass_info;
const ppcc_pass_info *ppcc_pass_list(int *count);

/* Runs every pass in order; if dump_after names a pass, writes the graph
 * in text form to dump_out after that pass. */
ppcc_status ppcc_run_passes(ppcc_graph *g, const char *dump_after, FILE *dump_out,
                            ppcc_diag *d);
/* Human-readable dump of the graph (values, ops, placements). */
void ppcc_graph_dump(const ppcc_graph *g, FILE *out);

#endif
