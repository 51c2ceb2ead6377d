/*===- enigma_cpu_abi.h - Calling convention of CPU kernels ---------------===*
 *
 * Shared by the host C++ the emitter generates and by the CPU backend that
 * calls it. Plain C so both sides agree byte for byte.
 *
 * A CPU kernel is
 *   extern "C" void enigma_kernel_<name>(void *const *args,
 *                                        const EnigmaCpuLaunch *launch,
 *                                        uint64_t group_begin,
 *                                        uint64_t group_end);
 * It runs threadgroups [group_begin, group_end) of the dispatch, groups
 * numbered x fastest. args[i] is the base pointer of buffer parameter i, or a
 * pointer to the value of scalar parameter i.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CPU_ABI_H
#define ENIGMA_CPU_ABI_H

#include <stdint.h>

typedef struct EnigmaCpuLaunch {
  uint32_t grid[3];    /* threads in the whole dispatch, per dimension */
  uint32_t threads[3]; /* threads per threadgroup, per dimension */
  uint32_t groups[3];  /* ceil(grid / threads), per dimension */
} EnigmaCpuLaunch;

typedef void (*EnigmaCpuKernelFn)(void *const *args,
                                  const EnigmaCpuLaunch *launch,
                                  uint64_t group_begin, uint64_t group_end);

#endif
