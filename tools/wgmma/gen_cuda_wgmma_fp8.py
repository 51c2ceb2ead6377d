#!/usr/bin/env python3
"""Writes include/enigma/Target/Prelude/enigma_cuda_wgmma_fp8_ops.cuh: one
wrapper per (A format, B format, N) of the sm_90a instruction
wgmma.mma_async m64nNk32 with 8-bit float operands (e4m3, e5m2) and f32
accumulators. Both operands come through shared-memory descriptors and
are K-major (the instruction has no transpose for 8-bit types). Inline PTX
must name every accumulator register, so the wrappers are written out in
full.

    python3 tools/wgmma/gen_cuda_wgmma_fp8.py > include/enigma/Target/Prelude/enigma_cuda_wgmma_fp8_ops.cuh
"""

WIDTHS = (64, 128, 256)
FORMATS = ("e4m3", "e5m2")

HEADER = r"""/*===- enigma_cuda_wgmma_fp8_ops.cuh - wgmma m64nNk32 fp8 wrappers -*- CUDA -*-===*
 *
 * Written by tools/wgmma/gen_cuda_wgmma_fp8.py (inline PTX names every
 * accumulator register, so each width is spelled out). d += A * B for the
 * warpgroup, A (64 x 32) and B (32 x N) of 8-bit floats read through
 * shared-memory descriptors, both K-major; AFmt / BFmt: 0 e4m3, 1 e5m2.
 * sm_90a only (__CUDA_ARCH_FEAT_SM90_ALL).
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_WGMMA_FP8_OPS_CUH
#define ENIGMA_CUDA_WGMMA_FP8_OPS_CUH

namespace enigma_wgmma {

template <int AFmt, int BFmt, int N> struct op_fp8;
"""


def wrapper(a, b, n):
    regs = n // 2
    da, db, one = regs, regs + 1, regs + 2
    out = [f"template <> struct op_fp8<{FORMATS.index(a)}, "
           f"{FORMATS.index(b)}, {n}> {{",
           "  static __device__ __forceinline__ void",
           "  run(float *d, unsigned long long da, unsigned long long db) {",
           "    asm volatile(",
           r'        "{\n.reg .pred p;\n"',
           rf'        "setp.ne.b32 p, %{one}, 0;\n"',
           f'        "wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{a}.{b} {{"']
    for i in range(0, regs, 8):
        names = ", ".join(f"%{j}" for j in range(i, min(i + 8, regs)))
        out.append(f'        "{names}{", " if i + 8 < regs else ""}"')
    out.append(rf'        "}}, %{da}, %{db}, p, 1, 1;\n}}\n"')
    for i in range(0, regs, 4):
        cons = ", ".join(f'"+f"(d[{j}])' for j in range(i, min(i + 4, regs)))
        out.append(f"        {': ' if i == 0 else '  '}{cons}"
                   f"{',' if i + 4 < regs else ''}")
    out.append('        : "l"(da), "l"(db), "r"(1));')
    out += ["  }", "};", ""]
    return "\n".join(out)


def main():
    parts = [HEADER]
    parts += [wrapper(a, b, n) for a in FORMATS for b in FORMATS
              for n in WIDTHS]
    parts.append("} // namespace enigma_wgmma\n\n"
                 "#endif /* ENIGMA_CUDA_WGMMA_FP8_OPS_CUH */\n")
    print("\n".join(parts), end="")


if __name__ == "__main__":
    main()
