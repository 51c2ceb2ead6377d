/*===- enigma_msl_abi.h - Kernel objects <-> MSL host runtime --*- C++ -*-===//
 *
 * The C interface between a compiled MSL kernel (a shared object built by the
 * MSL host runtime from the kernel's Metal source, the harness and
 * metal_stdlib) and the runtime in libenigma that runs it. The runtime owns
 * the threads of a threadgroup (fibers) and their scheduling; the kernel
 * object owns the Metal functions, which reach the scheduler through the
 * group's function pointers. docs/design/msl-host-runtime.md.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_MSL_ABI_H
#define ENIGMA_MSL_ABI_H

#include <stdint.h>

extern "C" {

/* Bumped whenever a structure below changes. */
#define ENIGMA_MSL_ABI_VERSION 2u
/* Bytes a lane can contribute to one simdgroup/quad function (ulong4). */
#define ENIGMA_MSL_SLOT_BYTES 64

typedef struct EnigmaMslThread EnigmaMslThread;
typedef struct EnigmaMslGroup EnigmaMslGroup;

/* Computes a simdgroup or quad function for the lanes of one simdgroup that
 * reached the same call site: lanes[0..count) in lane order, each with its
 * operand in `in` (and `operand`); writes each lane's result to `out`. */
typedef void (*EnigmaMslResolveFn)(EnigmaMslThread *const *lanes,
                                   uint32_t count);

/* One thread of the threadgroup being run (one fiber). */
struct EnigmaMslThread {
  uint32_t position_in_grid[3];
  uint32_t position_in_threadgroup[3];
  uint32_t index_in_threadgroup;
  uint32_t index_in_simdgroup;      /* lane: index_in_threadgroup % 32 */
  uint32_t simdgroup_index;         /* index_in_threadgroup / 32 */
  uint32_t operand;                 /* a shuffle's lane, delta or mask */
  const EnigmaMslGroup *group;
  /* A pending simdgroup/quad function: where it was called and how it is
   * computed. Lanes are grouped by (site, resolve). */
  const void *site;
  EnigmaMslResolveFn resolve;
  alignas(16) unsigned char in[ENIGMA_MSL_SLOT_BYTES];
  alignas(16) unsigned char out[ENIGMA_MSL_SLOT_BYTES];
};

/* The threadgroup being run and the dispatch it belongs to. */
struct EnigmaMslGroup {
  uint32_t threadgroup_position_in_grid[3];
  uint32_t threads_per_threadgroup[3];  /* partial at the grid's edge */
  uint32_t dispatch_threads_per_threadgroup[3]; /* as dispatched */
  uint32_t threads_per_grid[3];
  uint32_t threadgroups_per_grid[3];
  uint32_t thread_count;                /* threads of this group */
  uint32_t simdgroups_per_threadgroup;  /* ceil(thread_count / 32) */
  /* The launch's threadgroup memory, [[threadgroup(0)]]: this group's,
   * 16-byte aligned (null when the launch gives none). */
  void *threadgroup_memory;
  /* Suspends the calling thread until every live thread of the group has
   * reached a barrier (threads that returned take no part). */
  void (*barrier)(EnigmaMslThread *self);
  /* Suspends the calling thread, whose `site`, `resolve`, `in` and `operand`
   * are set, until the function has been computed into `out`. */
  void (*collective)(EnigmaMslThread *self);
};

/* What a kernel object exports. */
typedef uint32_t (*EnigmaMslAbiVersionFn)(void);
/* Runs the kernel for one thread; args[i] is the i-th parameter's buffer
 * (or a scalar's bytes), in [[buffer(i)]] order of the harness. */
typedef void (*EnigmaMslThreadMainFn)(void *const *args,
                                      EnigmaMslThread *self);

}

#endif /* ENIGMA_MSL_ABI_H */
