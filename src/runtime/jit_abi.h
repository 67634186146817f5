/* Private interface between the ABI adapters (jit_abi.c) and the JIT
 * executor (jit_exec.c) of the runtime. */
#ifndef PPCC_JIT_ABI_H
#define PPCC_JIT_ABI_H
#include "ppcc/jit.h"
#include "rt_internal.h"

/* Binds the calling thread to device `self` of comm: the adapters called
 * by JIT-compiled code on this thread act for that device. */
void rt_jit_bind(ppcc_rt_comm *comm, int self);
/* Index of the op whose runtime call failed first on this thread, or -1. */
int rt_jit_failed_op(void);

#endif
