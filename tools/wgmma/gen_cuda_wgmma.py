#!/usr/bin/env python3
"""Writes include/enigma/Target/Prelude/enigma_cuda_wgmma_ops.cuh: one
wrapper per (operand type, N, A in shared memory or registers) of the
sm_90a instruction wgmma.mma_async m64nNk16 with f32 accumulators. Inline
PTX must name every accumulator register, so the wrappers are written out
in full.

    python3 tools/wgmma/gen_cuda_wgmma.py > include/enigma/Target/Prelude/enigma_cuda_wgmma_ops.cuh
"""

WIDTHS = (64, 128, 256)
TYPES = ("bf16", "f16")

HEADER = r"""/*===- enigma_cuda_wgmma_ops.cuh - wgmma m64nNk16 wrappers ------*- CUDA -*-===*
 *
 * Written by tools/wgmma/gen_cuda_wgmma.py (inline PTX names every
 * accumulator register, so each width is spelled out). d += A * B for the
 * warpgroup, B read through a shared-memory descriptor, A through one
 * (op) or from four registers per warp (op_rs: the A fragment of
 * mma.sync m16n8k16 for the warp's 16 rows); TransB = 1 reads an
 * MN-major B. sm_90a only (__CUDA_ARCH_FEAT_SM90_ALL).
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_WGMMA_OPS_CUH
#define ENIGMA_CUDA_WGMMA_OPS_CUH

namespace enigma_wgmma {

struct bf16_tag {};
struct f16_tag {};
template <class Tag, int N, int TransB> struct op;
template <class Tag, int N, int TransB> struct op_rs;
"""


def wrapper(ptx, n, a_in_registers):
    """op (A through a descriptor) or op_rs (A from four registers)."""
    regs = n // 2
    if a_in_registers:
        name, a_arg = "op_rs", "const unsigned *a"
        a_ops = ", ".join(f'"r"(a[{j}])' for j in range(4))
        a_text = "{" + ", ".join(f"%{regs + j}" for j in range(4)) + "}"
        b, one, trans = regs + 4, regs + 5, regs + 6
        trans_a = ""
    else:
        name, a_arg = "op", "unsigned long long da"
        a_ops = '"l"(da)'
        a_text = f"%{regs}"
        b, one, trans = regs + 1, regs + 2, regs + 3
        trans_a = "0, "
    out = [f"template <int TransB> struct {name}<{ptx}_tag, {n}, TransB> {{",
           "  static __device__ __forceinline__ void",
           f"  run(float *d, {a_arg}, unsigned long long db) {{",
           "    asm volatile(",
           r'        "{\n.reg .pred p;\n"',
           rf'        "setp.ne.b32 p, %{one}, 0;\n"',
           f'        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ptx}.{ptx} {{"']
    for i in range(0, regs, 8):
        names = ", ".join(f"%{j}" for j in range(i, min(i + 8, regs)))
        out.append(f'        "{names}{", " if i + 8 < regs else ""}"')
    out.append(rf'        "}}, {a_text}, %{b}, p, 1, 1, {trans_a}%{trans};\n}}\n"')
    for i in range(0, regs, 4):
        cons = ", ".join(f'"+f"(d[{j}])' for j in range(i, min(i + 4, regs)))
        out.append(f"        {': ' if i == 0 else '  '}{cons}"
                   f"{',' if i + 4 < regs else ''}")
    out.append(f'        : {a_ops}, "l"(db), "r"(1), "n"(TransB));')
    out += ["  }", "};", ""]
    return "\n".join(out)


def main():
    parts = [HEADER]
    parts += [wrapper(ptx, n, rs) for rs in (False, True) for ptx in TYPES
              for n in WIDTHS]
    parts.append("} // namespace enigma_wgmma\n\n"
                 "#endif /* ENIGMA_CUDA_WGMMA_OPS_CUH */\n")
    print("\n".join(parts), end="")


if __name__ == "__main__":
    main()
