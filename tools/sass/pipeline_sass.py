"""What the SASS of the warp-specialised GEMM kernels holds, without a GPU.

    python3 tools/sass/pipeline_sass.py [--dump DIR]

Compiles every configuration of enigma.gemm_configs("cuda", dtype,
warp_specialized=True) (bf16, TF32, fp32) and of enigma.tf32_gemm_configs()
(TF32 wgmma, B stored n x k; and the same with B stored k x n as C^T = B^T
A^T, B's rows through registers) and
enigma.tf32_gemm_configs(b_transposed=False) (B stored k x n, copied
transposed) to an sm_90a cubin with NVRTC,
exactly as the CUDA runtime would, disassembles it with cuobjdump and
prints one Markdown row per kernel: registers (the count at entry, which
setmaxnreg then lowers for the producer and raises for the consumers),
the setmaxnreg values, local memory (spills), and the instructions that
matter: HGMMA (warpgroup products), UTMALDG (TMA loads), SYNCS (mbarrier
arrive / wait), BAR (named barriers), LDGSTS (the cp.async fallback) and
the instructions of the consumers' K loop (from the first HGMMA's loop
head to its back branch). `--dump DIR` keeps each kernel's SASS.

cuobjdump comes with the CUDA toolkit (or the nvidia-cuda-cuobjdump
package); found on PATH, in $CUDA_HOME/bin or in that package.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def cuobjdump():
    found = shutil.which("cuobjdump")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        path = os.path.join(root, "bin", "cuobjdump")
        if root and os.path.exists(path):
            return path
    for site in sys.path:
        for path in glob.glob(os.path.join(site, "nvidia", "*", "bin",
                                           "cuobjdump")):
            return path
    return None


def example(name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(REPO, "examples", "python", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels():
    """[(label, CUDA source)] of every warp-specialised configuration."""
    import enigma
    bf16, f32 = example("gemm_bf16"), example("gemm_f32")
    out = []
    for c in enigma.gemm_configs("cuda", "bf16", warp_specialized=True):
        out.append((f"bf16 {describe(c)}", bf16.compiled(c).cuda_source))
    for tf32 in (True, False):
        for c in enigma.gemm_configs("cuda", "f32", tf32,
                                     warp_specialized=True):
            out.append((f"{'tf32' if tf32 else 'f32'} {describe(c)}",
                        f32.compiled(c, tf32).cuda_source))
    for c in enigma.tf32_gemm_configs():   # TF32 wgmma, B stored n x k
        out.append((f"tf32-Bnk {describe(c)}",
                    f32.compiled(c, True, True).cuda_source))
    # TF32 wgmma, B stored k x n: copied transposed by the producer.
    for c in enigma.tf32_gemm_configs(b_transposed=False):
        out.append((f"tf32-Bkn {describe(c)}",
                    f32.compiled(c, True, False).cuda_source))
    # TF32 wgmma, B stored k x n as C^T = B^T A^T: B's rows in registers.
    for c in enigma.tf32_gemm_configs():
        out.append((f"tf32-swapped {describe(c)}",
                    f32.compiled_swapped(c).cuda_source))
    return out


def describe(c):
    return (f"{c.bm}x{c.bn}x{c.bk} {c.wm}x{c.wn} s{c.stages}"
            f"{' persistent' if c.persistent else ''}"
            f"{f' cluster={c.cluster}' if c.cluster > 1 else ''}")


def sass_of(source, tool):
    """(SASS text, resource usage text, ptxas log) of the sm_90a cubin."""
    import enigma
    os.environ["ENIGMA_NVRTC_OPTIONS"] = "--ptxas-options=-v"
    image, log = enigma._core.Runtime.nvrtc_binary(source, "sm_90a")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(image)
        sass = subprocess.run([tool, "-sass", path], capture_output=True,
                              text=True, check=True).stdout
        res = subprocess.run([tool, "-res-usage", path], capture_output=True,
                             text=True, check=True).stdout
    return sass, res, log


def uses_local_memory(sass):
    """Whether the SASS stores to or loads from local memory (spilled
    registers, or arrays the registers cannot hold)."""
    return bool(re.search(r"\b(STL|LDL)\b", sass))


def count(sass, opcode):
    return len(re.findall(r"\b" + opcode + r"\b", sass))


def k_loop(sass):
    """The instructions of the innermost loop holding the first HGMMA (or
    HMMA / FFMA): from the target of the backward branch that closes it to
    that branch."""
    lines = [ln for ln in sass.splitlines() if re.match(r"\s*/\*[0-9a-f]{4}\*/", ln)]
    addr = lambda ln: int(re.match(r"\s*/\*([0-9a-f]{4})\*/", ln).group(1), 16)
    for key in ("HGMMA", "HMMA", "FFMA"):
        first = next((i for i, ln in enumerate(lines) if key in ln), None)
        if first is None:
            continue
        here = addr(lines[first])
        best = None
        for ln in lines[first:]:
            m = re.search(r"BRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))", ln)
            if m and m.group(1) and int(m.group(1), 16) <= here:
                best = (int(m.group(1), 16), addr(ln))
                break
        if best is None:
            # Labels: find the branch back to a label before the product.
            labels = {}
            for i, ln in enumerate(lines):
                for lab in re.findall(r"\.L_x_\d+", ln):
                    labels.setdefault(lab, []).append(i)
            for i in range(first, len(lines)):
                m = re.search(r"BRA\s+`?\(?(\.L_x_\d+)", lines[i])
                if m:
                    target = min(labels.get(m.group(1), [i]))
                    if target <= first:
                        return key, lines[target:i + 1]
            continue
        start, end = best
        body = [ln for ln in lines if start <= addr(ln) <= end]
        return key, body
    return None, []


def report(dump=None):
    tool = cuobjdump()
    if tool is None:
        print("cuobjdump not found (CUDA toolkit or nvidia-cuda-cuobjdump)")
        return 1
    print("| kernel | registers | setmaxnreg | local memory | HGMMA | UTMALDG "
          "| SYNCS | BAR | LDGSTS | K loop (instructions: products) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, source in kernels():
        sass, res, log = sass_of(source, tool)
        if dump:
            os.makedirs(dump, exist_ok=True)
            with open(os.path.join(dump, label.replace(" ", "_") + ".sass"),
                      "w") as f:
                f.write(sass)
        regs = re.search(r"REG:(\d+)", res)
        local = re.search(r"LOCAL:(\d+)", res)
        # Producer (DEALLOC) and consumer (TRY_ALLOC) register counts.
        maxreg = [str(int(v, 16)) for v in re.findall(
            r"USETMAXREG\.(?:TRY_ALLOC|DEALLOC)\.CTAPOOL\s+(?:UP\d+,\s*)?"
            r"0x([0-9a-f]+)", sass)]
        maxreg = sorted(set(maxreg), key=int)
        key, loop = k_loop(sass)
        products = sum(1 for ln in loop if key and key in ln)
        warn = " (ptxas warning)" if re.search(r"ptxas\s+warning|C75\d\d",
                                               log) else ""
        print(f"| {label}{warn} | {regs.group(1) if regs else '?'} | "
              f"{'/'.join(maxreg) or '-'} | "
              f"{local.group(1) if local else '?'} | {count(sass, 'HGMMA')} | "
              f"{count(sass, 'UTMALDG')} | {len(re.findall(r'SYNCS', sass))} | "
              f"{count(sass, 'BAR')} | {count(sass, 'LDGSTS')} | "
              f"{len(loop)}: {products} {key or ''} |")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dump", help="folder for each kernel's SASS")
    sys.path.insert(0, os.path.join(REPO, "python"))
    sys.exit(report(p.parse_args().dump))
