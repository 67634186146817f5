/* Per-device arenas for the buffers JIT-compiled code allocates.
 *
 * The lowering (src/emit/exec/exec_jit.c) makes every memref.alloc / dealloc
 * call _mlir_memref_to_llvm_alloc / _mlir_memref_to_llvm_free
 * (finalize-memref-to-llvm{use-generic-functions}); those land here, on
 * the device thread that rt_jit_arena_begin bound.
 *
 * A device function allocates the same sizes in the same order every run.
 * The first run of a compiled device function records that sequence on the
 * heap (each allocation's size, and the logical times of its allocation
 * and free); at its end the offsets are planned by lifetime (rt_arena_plan,
 * as the interpreter does) and one block is allocated and touched. Later
 * runs replay: the k-th allocation is block + offset[k], a free inside the
 * block does nothing. Should a run ever allocate differently (another
 * size, more allocations), the rest of that run uses the heap and the next
 * run records again.
 *
 * For `ppcc run --check-plan` each device thread counts the bytes of its
 * live allocations and their high-water mark (rt_jit_arena_peak): heap
 * buffers one by one; a replay reports its recording run's mark, since it
 * allocates and frees the same sizes in the same order. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "../exec/exec.h"
#include "jit_abi.h"

typedef struct jit_arena {
  atomic_bool busy;  /* a run of some device function holds it */
  const void *key;   /* the device function the plan belongs to */
  bool replay;       /* block and log[].offset are valid */
  bool broken;       /* this run left the recorded sequence */
  rt_arena_buf *log; /* record: size, birth, death; replay: offset */
  int n, cap, next, event;
  char *block;
  int64_t bytes;
  int64_t recorded_peak; /* live-bytes high-water of the recording run */
} jit_arena;

static jit_arena arenas[PPCC_MAX_DEVICES];
static _Thread_local jit_arena *bound;
/* --check-plan: bytes of this thread's live allocations and their
 * high-water mark since rt_jit_arena_begin. */
static _Thread_local int64_t live_bytes, peak_bytes;

static void count(int64_t delta) {
  live_bytes += delta;
  if (live_bytes > peak_bytes) peak_bytes = live_bytes;
}

/* Heap buffers carry a header before the data: the size (for the
 * --check-plan count), the log index (-1: none) and the header size, so
 * that a free finds all three. */
#define HEADER 64

static void *heap_alloc(int64_t size, int64_t alignment, int index) {
  int64_t head = alignment > HEADER ? alignment : HEADER;
  char *base = NULL;
  if (posix_memalign((void **)&base, (size_t)head, (size_t)(head + (size > 0 ? size : 1))) != 0) return NULL;
  char *p = base + head;
  int64_t meta[3] = {size, index, head};
  memcpy(p - 24, meta, sizeof meta);
  count(size);
  return p;
}

static void heap_free(char *p) {
  int64_t meta[3];
  memcpy(meta, p - 24, sizeof meta);
  jit_arena *a = bound;
  if (a && !a->replay && meta[1] >= 0 && meta[1] < a->n) a->log[meta[1]].death = a->event++;
  count(-meta[0]);
  free(p - meta[2]);
}

static void *arena_alloc(int64_t size, int64_t alignment) {
  jit_arena *a = bound;
  if (!a) return heap_alloc(size, alignment, -1);
  if (a->replay) {
    int k = a->next++;
    if (!a->broken && k < a->n && a->log[k].bytes == size && alignment <= RT_ARENA_ALIGN)
      return a->block + a->log[k].offset;
    a->broken = true;
    return heap_alloc(size, alignment, -1);
  }
  if (a->n == a->cap) {
    int cap = a->cap ? a->cap * 2 : 256;
    rt_arena_buf *log = realloc(a->log, sizeof *log * (size_t)cap);
    if (!log) {
      a->broken = true;
      return heap_alloc(size, alignment, -1);
    }
    a->log = log, a->cap = cap;
  }
  a->log[a->n] = (rt_arena_buf){size, a->event++, -1, 0};
  return heap_alloc(size, alignment, a->n++);
}

void *rt_jit_alloc(uint64_t size) { return arena_alloc((int64_t)size, 16); }
void *rt_jit_aligned_alloc(uint64_t alignment, uint64_t size) {
  return arena_alloc((int64_t)size, (int64_t)alignment);
}
void rt_jit_free(void *p) {
  jit_arena *a = bound;
  if (!p) return;
  if (a && a->block && (char *)p >= a->block && (char *)p < a->block + a->bytes) return; /* planned */
  heap_free(p);
}

static void reset(jit_arena *a) {
  rt_free(a->block);
  a->block = NULL;
  a->bytes = 0;
  a->n = 0;
  a->replay = false;
}

void rt_jit_arena_begin(int dev, const void *key) {
  bound = NULL;
  live_bytes = peak_bytes = 0;
  if (dev < 0 || dev >= PPCC_MAX_DEVICES || getenv("PPCC_NO_ARENA")) return; /* bench/: the heap, for a before/after */
  jit_arena *a = &arenas[dev];
  if (atomic_exchange(&a->busy, true)) return; /* another run uses it: the heap */
  if (a->key != key) reset(a);
  a->key = key;
  a->next = a->event = 0;
  a->broken = false;
  bound = a;
  /* a replay allocates and frees as the recording run did: the same
   * high-water mark (planned blocks are not counted one by one) */
  if (a->replay) peak_bytes = a->recorded_peak;
}

int64_t rt_jit_arena_peak(void) { return peak_bytes; }

void rt_jit_arena_end(bool ok) {
  jit_arena *a = bound;
  bound = NULL;
  if (!a) return;
  if (a->replay && (a->broken || a->next != a->n)) { /* left the plan: record again */
    reset(a);
  } else if (!a->replay && ok && !a->broken) {
    for (int k = 0; k < a->n; k++)
      if (a->log[k].death < 0) a->log[k].death = a->event; /* never freed: lives to the end */
    int64_t planned = rt_arena_plan(a->log, a->n);
    a->block = planned >= 0 ? rt_alloc(planned > 0 ? planned : RT_ARENA_ALIGN) : NULL;
    if (a->block) {
      memset(a->block, 0, (size_t)(planned > 0 ? planned : RT_ARENA_ALIGN)); /* touched once, here */
      a->bytes = planned;
      a->recorded_peak = peak_bytes;
      a->replay = true;
      rt_arena_record((int)(a - arenas), planned, 0);
    } else {
      reset(a);
    }
  } else if (!a->replay) {
    reset(a);
  }
  atomic_store(&a->busy, false);
}
