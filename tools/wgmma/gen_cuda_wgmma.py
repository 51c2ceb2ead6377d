#!/usr/bin/env python3
"""Writes include/enigma/Target/Prelude/enigma_cuda_wgmma_ops.cuh: one
wrapper per (A type, B type, N, A in shared memory or registers) of the
sm_90a instruction wgmma.mma_async m64nNkK with f32 accumulators, from
one table of operand types. Inline PTX must name every accumulator
register, so the wrappers are written out in full.

    python3 tools/wgmma/gen_cuda_wgmma.py > include/enigma/Target/Prelude/enigma_cuda_wgmma_ops.cuh
"""

WIDTHS = (64, 128, 256)


class Operand:
    """One operand type of the instruction: its PTX name, the K of one
    instruction (always 32 bytes of a K-major row), whether the
    instruction may read it MN-major (the transpose immediates exist only
    for 16-bit types), the types it multiplies with, and whether wrappers
    with A in registers are written."""

    def __init__(self, ptx, k, transposable, partners, registers_a):
        self.ptx, self.k, self.transposable = ptx, k, transposable
        self.partners, self.registers_a = partners, registers_a


OPERANDS = (
    Operand("bf16", 16, True, ("bf16",), True),
    Operand("f16", 16, True, ("f16",), True),
    Operand("tf32", 8, False, ("tf32",), True),
    Operand("e4m3", 32, False, ("e4m3", "e5m2"), False),
    Operand("e5m2", 32, False, ("e4m3", "e5m2"), False),
)

HEADER = r"""/*===- enigma_cuda_wgmma_ops.cuh - wgmma m64nNkK wrappers ------*- CUDA -*-===*
 *
 * Written by tools/wgmma/gen_cuda_wgmma.py (inline PTX names every
 * accumulator register, so each width is spelled out). d += A * B for the
 * warpgroup, B read through a shared-memory descriptor, A through one
 * (op) or from four registers per warp (op_rs: the A fragment of
 * mma.sync m16n8k16, or m16n8k8 for tf32, for the warp's 16 rows);
 * scale_d = 0 ignores d's
 * values (d = A * B: a product into a zero accumulator without zeroing
 * it). One instruction reads 32
 * bytes of K: K = 16 for bf16 / f16, 8 for tf32 (f32 data, the low 13
 * mantissa bits ignored), 32 for e4m3 / e5m2. TransB = 1 reads an
 * MN-major B (16-bit types only; the others are K-major both).
 * sm_90a only (__CUDA_ARCH_FEAT_SM90_ALL).
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_WGMMA_OPS_CUH
#define ENIGMA_CUDA_WGMMA_OPS_CUH

namespace enigma_wgmma {
"""


def tag(ptx):
    return f"{ptx}_tag"


def wrapper(a, b, n, a_in_registers):
    """op (A through a descriptor) or op_rs (A from four registers) for
    A of type a and B of type b."""
    regs = n // 2
    if a_in_registers:
        name, a_arg = "op_rs", "const unsigned *a"
        a_ops = ", ".join(f'"r"(a[{j}])' for j in range(4))
        a_text = "{" + ", ".join(f"%{regs + j}" for j in range(4)) + "}"
        first = regs + 4
    else:
        name, a_arg = "op", "unsigned long long da"
        a_ops = '"l"(da)'
        a_text = f"%{regs}"
        first = regs + 1
    b_arg, one, trans = first, first + 1, first + 2
    if a.transposable:
        # scale-d, imm-scale-a, imm-scale-b, [imm-trans-a,] imm-trans-b
        head = f"template <int TransB> struct {name}<{tag(a.ptx)}, " \
               f"{tag(b.ptx)}, {n}, TransB> {{"
        tail = (", 1, 1, " + ("" if a_in_registers else "0, ") +
                f"%{trans}")
        trans_op = ', "n"(TransB)'
    else:
        head = f"template <> struct {name}<{tag(a.ptx)}, {tag(b.ptx)}, " \
               f"{n}, 0> {{"
        tail = ", 1, 1"
        trans_op = ""
    types = f"{a.ptx}.{b.ptx}"
    out = [head,
           "  static __device__ __forceinline__ void",
           f"  run(float *d, {a_arg}, unsigned long long db, "
           "int scale_d = 1) {",
           "    asm volatile(",
           r'        "{\n.reg .pred p;\n"',
           rf'        "setp.ne.b32 p, %{one}, 0;\n"',
           f'        "wgmma.mma_async.sync.aligned.m64n{n}k{a.k}.f32.'
           f'{types} {{"']
    for i in range(0, regs, 8):
        names = ", ".join(f"%{j}" for j in range(i, min(i + 8, regs)))
        out.append(f'        "{names}{", " if i + 8 < regs else ""}"')
    out.append(rf'        "}}, {a_text}, %{b_arg}, p{tail};\n}}\n"')
    for i in range(0, regs, 4):
        cons = ", ".join(f'"+f"(d[{j}])' for j in range(i, min(i + 4, regs)))
        out.append(f"        {': ' if i == 0 else '  '}{cons}"
                   f"{',' if i + 4 < regs else ''}")
    out.append(f'        : {a_ops}, "l"(db), "r"(scale_d){trans_op});')
    out += ["  }", "};", ""]
    return "\n".join(out)


def main():
    by_name = {o.ptx: o for o in OPERANDS}
    parts = [HEADER]
    parts += [f"struct {tag(o.ptx)} {{}};" for o in OPERANDS]
    parts += ["template <class ATag, class BTag, int N, int TransB> "
              "struct op;",
              "template <class ATag, class BTag, int N, int TransB> "
              "struct op_rs;", ""]
    for rs in (False, True):
        for a in OPERANDS:
            if rs and not a.registers_a:
                continue
            for partner in a.partners:
                for n in WIDTHS:
                    parts.append(wrapper(a, by_name[partner], n, rs))
    parts.append("} // namespace enigma_wgmma\n\n"
                 "#endif /* ENIGMA_CUDA_WGMMA_OPS_CUH */\n")
    print("\n".join(parts), end="")


if __name__ == "__main__":
    main()
