"""Compile the fused SSD forward for sm_90 without a GPU and print its resources and SASS mix.

    env -u TRITON_INTERPRET python benchmarks/offline_ssd_forward.py [--sub 64] [--block-p 64]
        [--warps 4] [--stages 2] [--late] [--z] [--d] [--maxnreg N] [--pre-decays] [--fp16] [--sass FILE]

The kernel is compiled the way the JIT specialises it for the 2.7B bench shape (bf16 x/B/C, fp32
dt, contiguous tensors: unit strides become constants, 16-divisible pointers and strides are
marked so). Registers, spills and shared memory come from ptxas; the SASS histogram counts the
instructions of the whole kernel by opcode (HGMMA, MUFU, LDG/STG, LDS/STS, BAR, ...), which is
how a change's effect on the loop is checked before spending GPU time on it. The local Triton may
be newer than the GPU machine's: the figures are indicative, the GPU's timing decides.
"""

import argparse
import collections
import os
import re
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from flashssm.ops.ssd.forward import _ssd_fwd_kernel

# 2.7B shape, contiguous: x/y/z (b, t, 80, 64), dt (b, t, 80), B/C (b, t, 1, 128)
STRIDES = {
    "stride_x_b": 4096 * 5120, "stride_x_t": 5120, "stride_x_h": 64, "stride_x_p": 1,
    "stride_dt_b": 4096 * 80, "stride_dt_t": 80, "stride_dt_h": 1,
    "stride_B_b": 4096 * 128, "stride_B_t": 128, "stride_B_g": 128, "stride_B_n": 1,
    "stride_C_b": 4096 * 128, "stride_C_t": 128, "stride_C_g": 128, "stride_C_n": 1,
    "stride_z_b": 4096 * 5120, "stride_z_t": 5120, "stride_z_h": 64, "stride_z_p": 1,
    "stride_y_b": 4096 * 5120, "stride_y_t": 5120, "stride_y_h": 64, "stride_y_p": 1,
    "stride_D_h": 1, "stride_D_p": 0,
}
SIZES = {"batch": 8, "seqlen": 4096, "nheads": 80, "headdim": 64, "dstate": 128, "heads_per_group": 80,
         "n_pblocks": 1, "n_programs": 8 * 16 * 80}
FP32_PTRS = {"decays_ptr", "dt_ptr", "A_ptr", "D_ptr", "dt_bias_ptr", "init_ptr", "final_ptr", "states_ptr", "slot_ptr",
             "scale_ptr"}
INT_PTRS = {"counter_ptr": "*i32", "flag_ptr": "*i32", "table_ptr": "*i64", "state_rows_ptr": "*i64"}


def compile_forward(sub, block_p, warps, stages, late, has_z, has_d, maxnreg=None, prefetch=False, sub_a=None,
                    output=True, pre_decays=False, extra=None, in_type="*bf16"):
    consts = dict(CHUNK=256, SUB=sub, BLOCK_P=block_p, BLOCK_N=128, HAS_D=has_d, HAS_Z=has_z, HAS_DT_BIAS=False,
                  DT_SOFTPLUS=False, HAS_INIT=False, STORE_FINAL=False, IS_VARLEN=False, EARLY_PUBLISH=not late,
                  DOT_PRECISION="tf32", M_PRECISION="tf32", M_SPLIT=True, OUTPUT=output, STORE_YPRE=False,
                  STORE_STATES=not output, PREFETCH=prefetch, SUB_A=sub_a or sub, STATE_CHUNK=256, PRE_DECAYS=pre_decays,
                  PRE_SUB=sub if output else (sub_a or sub))
    consts.update(extra or {})
    ptr_type = lambda name: INT_PTRS.get(name, "*fp32" if name in FP32_PTRS else in_type)  # noqa: E731
    return compile_specialised(_ssd_fwd_kernel, consts, {**STRIDES, **SIZES}, ptr_type, warps, stages=stages,
                               maxnreg=maxnreg, floats=("dt_lo", "dt_hi"))


def compile_gluon_forward(has_z=True, has_d=True, block_n=128, chunk=2048, extra=None, sizes=None, in_type="*bf16",
                          states_type="*fp32"):
    """The Gluon forward (forward_gluon.py) compiled for sm_90 as the 2.7B bench shape specialises it (`extra`: more
    constexprs, e.g. EARLY; `sizes`: other run-time values, e.g. n_pblocks 2, which is then no constant; `in_type`
    x, B, C and y's, e.g. "*fp16"; `states_type` the stored states', e.g. "*fp16" for fp16's scaled ones)."""
    from triton.experimental.gluon._runtime import GluonASTSource

    from flashssm.ops.ssd.forward_gluon import _ssd_fwd_gluon_kernel

    consts = {**dict(CHUNK=chunk, SUB=64, BLOCK_P=64, BLOCK_N=block_n, HAS_D=has_d, HAS_Z=has_z, STORE_YPRE=has_z,
                     HAS_INIT=True, STORE_FINAL=True), **(extra or {})}
    span = 256 if (extra or {}).get("PIECES") else chunk  # (PIECES: `span` is a chunk's tokens)
    values = {**STRIDES, **SIZES, "span": span, "stride_init_s": 80 * 64 * 128, "stride_init_h": 64 * 128,
              "stride_init_p": 128, "stride_init_n": 1, "stride_final_s": 80 * 64 * 128, "stride_final_h": 64 * 128,
              "stride_final_p": 128, "stride_final_n": 1, **(sizes or {})}
    ptr_type = lambda name: (states_type if name == "states_ptr"  # noqa: E731
                             else INT_PTRS.get(name, "*fp32" if name in FP32_PTRS else in_type))
    types = {}
    if consts.get("TMA"):  # the TMA form's descriptors (`forward_gluon.tma_descriptors`): 2-D, the stages' blocks
        from triton.experimental.gluon import language as gl

        elem = {"*bf16": gl.bfloat16, "*fp16": gl.float16}[in_type]
        for name, cols in (("x_desc", 64), ("B_desc", block_n), ("C_desc", block_n)):
            layout = gl.NVMMASharedLayout.get_default_for([64, cols], elem)
            types[name] = f"tensordesc<{in_type[1:]}[64, {cols}],{layout!r}>"
        if consts.get("TMA_STATES"):
            layout = gl.NVMMASharedLayout.get_default_for([block_n, 64], elem)
            types["states_desc"] = f"tensordesc<{in_type[1:]}[{block_n}, 64],{layout!r}>"
    return compile_specialised(_ssd_fwd_gluon_kernel, consts, values, ptr_type, 4, source=GluonASTSource, types=types)


def compile_specialised(kernel, consts, values, ptr_type, warps, stages=None, maxnreg=None, floats=(),
                        source=ASTSource, types=None):
    """triton.compile for sm_90, specialised as the JIT would for these arguments: pointers typed by
    ptr_type(name) and marked 16-divisible, the names in floats fp32, a constexpr not in consts its default (as
    the JIT takes it), `types` a name's signature type as given (e.g. a tensor descriptor's), every other argument an
    int whose value in `values` decides (an unknown one is left unmarked): equal to 1 becomes a constant, a multiple
    of 16 is marked so."""
    signature, attrs = {}, {}
    consts = dict(consts)
    for param in kernel.params:  # (left out, a constexpr would be compiled as a run-time int)
        if param.is_constexpr and param.has_default and param.name not in consts:
            consts[param.name] = param.default
    for i, name in enumerate(kernel.arg_names):
        if name in consts:
            signature[name] = "constexpr"
        elif name in (types or {}):
            signature[name] = types[name]
        elif name.endswith("_ptr"):
            signature[name] = ptr_type(name)
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif name in floats:
            signature[name] = "fp32"
        elif values.get(name) == 1:  # the JIT turns an int equal to 1 into a constant
            signature[name] = "constexpr"
            consts[name] = 1
        else:
            signature[name] = "i32"
            if values.get(name, 1) % 16 == 0:  # and marks multiples of 16
                attrs[(i,)] = [["tt.divisibility", 16]]
    options = {"num_warps": warps}
    if stages is not None:
        options["num_stages"] = stages
    if maxnreg:
        options["maxnreg"] = maxnreg
    return triton.compile(source(kernel, signature, consts, attrs),
                          target=GPUTarget("cuda", 90, 32), options=options)


def sass_histogram(cubin: bytes) -> tuple[collections.Counter, str]:
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout
    ops = collections.Counter(op for _, op, _ in sass_instructions(sass))
    return ops, sass


def sass_instructions(sass: str) -> list[tuple[int, str, str]]:
    """The SASS's instructions as (address, opcode without its modifiers, operands), predicates dropped."""
    ins = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*)", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2).split(".")[0], m.group(3)))
    return ins


def loop_report(sass: str, keys=("LDL", "STL", "MUFU", "LDG", "STG"), smallest: int = 30) -> list[str]:
    """Per loop of the SASS (a branch back to an earlier address: the loop from its target to the branch, nested
    loops counted in their outer ones too), its address range, instructions and the count of each opcode in keys;
    loops under `smallest` instructions left out. Where a spill sits decides what it costs: a local load at the head
    of a hot loop runs every iteration, one outside it once."""
    ins = sass_instructions(sass)
    out = []
    for addr, op, arg in ins:
        target = re.search(r"0x([0-9a-f]+)", arg) if op == "BRA" else None
        if target and int(target.group(1), 16) < addr:
            lo = int(target.group(1), 16)
            body = [o for a, o, _ in ins if lo <= a <= addr]
            if len(body) >= smallest:
                counts = collections.Counter(body)
                out.append(f"loop {lo:#x}-{addr:#x}: {len(body)} instructions, "
                           + " ".join(f"{k} {counts.get(k, 0)}" for k in keys))
    return out


def ptxas_usage(ptx: str, maxnreg: int | None) -> str:
    """ptxas -v on the PTX: 'Used N registers, ... bytes spill stores'."""
    bin_dir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    tool = os.path.join(bin_dir, "ptxas-blackwell")  # newer Triton writes PTX that only this one reads
    if not os.path.exists(tool):
        tool = os.path.join(bin_dir, "ptxas")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        cmd = [tool, "-arch=sm_90a", "-v", src, "-o", os.path.join(d, "k.cubin")]
        if maxnreg:
            cmd.insert(1, f"--maxrregcount={maxnreg}")
        run = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return run.stderr + run.stdout


def resource_report(k, keys, maxnreg=None, sass_path=None, loops=False) -> tuple[str, str, str]:
    """(SASS mix: total and the count of each opcode in keys, registers, spilled bytes) of a compiled
    kernel; the SASS goes to sass_path if given; with loops, `loop_report`'s lines follow the mix."""
    ops, sass = sass_histogram(k.asm["cubin"])
    usage = ptxas_usage(k.asm["ptx"], maxnreg)
    regs = re.search(r"Used (\d+) registers", usage).group(1)
    spills = re.search(r"(\d+) bytes spill stores", usage).group(1)
    if sass_path:
        with open(sass_path, "w") as f:
            f.write(sass)
    mix = f"total {sum(ops.values())} | " + " ".join(f"{key} {ops.get(key, 0)}" for key in keys)
    if loops:
        mix += "".join(f"\n  {line}" for line in loop_report(sass))
    return mix, regs, spills


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sub", type=int, default=64)
    p.add_argument("--block-p", type=int, default=64)
    p.add_argument("--warps", type=int, default=4)
    p.add_argument("--stages", type=int, default=2)
    p.add_argument("--maxnreg", type=int)
    p.add_argument("--late", action="store_true")
    p.add_argument("--z", action="store_true")
    p.add_argument("--d", action="store_true")
    p.add_argument("--prefetch", action="store_true")
    p.add_argument("--sub-a", type=int, help="the own-state sweep's sub-chunk (default: --sub)")
    p.add_argument("--states-only", action="store_true", help="no output sweep: the backward's state recompute")
    p.add_argument("--pre-decays", action="store_true", help="dt and its cumsums loaded (the preparation launch's)")
    p.add_argument("--sass", help="write the SASS here")
    p.add_argument("--const", action="append", default=[], metavar="NAME=INT",
                   help="another constexpr of the kernel, e.g. PRE_CB=1 (repeatable)")
    p.add_argument("--fp16", action="store_true", help="fp16 x, B, C, y (the fp16 operands' scaled products)")
    a = p.parse_args()
    extra = {name: int(value) for name, value in (c.split("=", 1) for c in a.const)}
    k = compile_forward(a.sub, a.block_p, a.warps, a.stages, a.late, a.z, a.d, a.maxnreg, a.prefetch, a.sub_a,
                        not a.states_only, a.pre_decays, extra, "*fp16" if a.fp16 else "*bf16")
    mix, regs, spills = resource_report(k, ["HGMMA", "WARPGROUP", "HMMA", "MUFU", "FFMA", "FMUL", "FADD", "F2FP", "LDG",
                                            "STG", "LDS", "STS", "LDSM", "STSM", "LDGSTS", "BAR", "SHFL", "LDL", "STL"],
                                        a.maxnreg, a.sass)
    print(f"sub {a.sub}/{a.sub_a or a.sub}{' states' if a.states_only else ''} bp {a.block_p} w {a.warps} "
          f"st {a.stages} {'late' if a.late else 'early'}{' fp16' if a.fp16 else ''}"
          f"{' z' if a.z else ''}{' D' if a.d else ''}{' prefetch' if a.prefetch else ''}{' pre' * a.pre_decays}{''.join(' ' + c for c in a.const)}: regs {regs} spill-bytes {spills} "
          f"smem {k.metadata.shared // 1024}K {mix}")


if __name__ == "__main__":
    main()
