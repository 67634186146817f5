/* Private interface between the ABI adapters (jit_abi.c) and the JIT
 * executor (jit_exec.c) of the runtime. */
#ifndef PPCC_JIT_ABI_H
#define PPCC_JIT_ABI_H
#include "ppcc/jit.h"
#include "../rt_internal.h"

/* Binds the calling thread to device `self` of comm: the adapters called
 * by JIT-compiled code on this thread act for that device. */
void rt_jit_bind(ppcc_rt_comm *comm, int self);
/* Index of the op whose runtime call failed first on this thread, or -1. */
int rt_jit_failed_op(void);

/* jit_arena.c: the device's arena for buffers the compiled code
 * allocates, bound to the calling thread between begin and end (key: the
 * device function; a new key records a new plan). ok: the run succeeded. */
void rt_jit_arena_begin(int dev, const void *key);
void rt_jit_arena_end(bool ok);
/* High-water mark of the bytes the compiled code held allocated on this
 * thread since rt_jit_arena_begin (whether from the arena or the heap):
 * what --check-plan counts as the device's activations. */
int64_t rt_jit_arena_peak(void);
/* Milliseconds this thread spent in communication calls (send, recv,
 * collectives) since rt_jit_bind: not busy time for --check-plan. */
double rt_jit_comm_ms(void);
/* memref.alloc / dealloc of JIT-compiled code (the generic functions of
 * finalize-memref-to-llvm). */
void *rt_jit_alloc(uint64_t size);
void *rt_jit_aligned_alloc(uint64_t alignment, uint64_t size);
void rt_jit_free(void *p);

#endif
