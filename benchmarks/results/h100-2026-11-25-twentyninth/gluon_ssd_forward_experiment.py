"""Experiment: the SSD forward's late-publish sweep written in Gluon, with asynchronous wgmma.

    PYTHONPATH=. python3 benchmarks/results/h100-2026-11-25-twentyninth/gluon_ssd_forward_experiment.py [--workload 2.7b-8x4K ...]     (GPU: check, then A/B)
    env -u TRITON_INTERPRET PYTHONPATH=. /tmp/v36/bin/python benchmarks/results/h100-2026-11-25-twentyninth/gluon_ssd_forward_experiment.py --offline  (sm_90 SASS)

Why (benchmarks/notes/ssd_forward.md): the Triton kernel's output sweep is latency-bound. Triton 3.6 makes a wgmma
asynchronous only when it accumulates into a loop-carried value that nothing else reads, so each of the sweep's five
products a sub-chunk is issued and waited for at once, and two programs an SM leave the tensor pipe idle about three
quarters of the time (8x4K: ~3950 SM clocks a sub-chunk-program against ~1000 of tensor work). Here the products are
issued back to back and waited for only where their results are needed:

    top:  C.B^T and C.H (H: the running state, bf16 in shared memory), both asynchronous
          w x (w_j = exp(last - cs_j) dt_j) into shared memory; the state update B^T (w x) + e^last H issued
          wait for C.B^T -> the masked decay matrix m, split into m_hi + m_lo (16-bit)
          wait for C.H -> y = e^cs C.H, then m_hi x and m_lo x on top, asynchronous
          wait for all -> H (fp32 registers) to shared memory as bf16; y out
    the next sub-chunk's x, B, C rows come in by cp.async one iteration ahead (two stages).

Scope (an experiment, not the package's kernel): late publish (many chains), 16-bit x/B/C, headdim 64, dstate 128,
sub-chunks of 64, fp32 states, no D, z, dt_bias, initial or final states, packed sequences. dt and its cumsums come
from the package's preparation launch (`forward._decays`); tickets, flags and slots from its workspace, with the same
protocol as `_ssd_fwd_kernel`, so the two kernels' results can be compared bit for bit where they round alike.
"""

import argparse
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia import hopper
from triton.experimental.gluon.language.nvidia.ampere import async_copy

# Triton 3.6's name for cp.async (3.9 renamed it async_load, same arguments)
_async_load = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared
# and its CTA barrier (3.9: gl.barrier)
_barrier = getattr(gl, "thread_barrier", None) or gl.barrier

SUB = 64
BLOCK_P = 64
BLOCK_N = 128


@gluon.jit
def _issue_loads(x_st, B_st, C_st, x_base, B_base, C_base, s0, length, stride_x_t, stride_B_t, stride_C_t,
                 SUB: gl.constexpr, BLOCK_P: gl.constexpr, BLOCK_N: gl.constexpr):
    """cp.async of the sub-chunk at s0's x [SUB, BLOCK_P], B and C [SUB, BLOCK_N] rows into one stage (zeros past
    the span's end)."""
    ld_p: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    ld_n: gl.constexpr = gl.BlockedLayout([1, 8], [2, 16], [4, 1], [1, 0])
    t_p = s0 + gl.arange(0, SUB, layout=gl.SliceLayout(1, ld_p))
    p = gl.arange(0, BLOCK_P, layout=gl.SliceLayout(0, ld_p))
    _async_load(x_st, x_base + t_p[:, None] * stride_x_t + p[None, :],
                                           mask=(t_p < length)[:, None])
    t_n = s0 + gl.arange(0, SUB, layout=gl.SliceLayout(1, ld_n))
    n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, ld_n))
    mask_n = (t_n < length)[:, None]
    _async_load(B_st, B_base + t_n[:, None] * stride_B_t + n[None, :], mask=mask_n)
    _async_load(C_st, C_base + t_n[:, None] * stride_C_t + n[None, :], mask=mask_n)
    async_copy.commit_group()


@gluon.jit
def _prefetch_rows(x_base, B_base, C_base, s0, length, stride_x_t, stride_B_t, stride_C_t, SUB: gl.constexpr):
    """L2 prefetch of the rows of tokens s0.. (capped at the span's last): x's 128-byte row, B's and C's two lines."""
    lay: gl.constexpr = gl.BlockedLayout([1, 2], [16, 2], [4, 1], [1, 0])
    t = gl.minimum(s0 + gl.arange(0, SUB, layout=gl.SliceLayout(1, lay)), length - 1)[:, None]
    two = gl.arange(0, 2, layout=gl.SliceLayout(0, lay))[None, :]
    asm: gl.constexpr = "prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;"
    gl.inline_asm_elementwise(asm, "=r,l", [x_base + t * stride_x_t + two * 0], dtype=gl.int32, is_pure=False,
                              pack=1)
    gl.inline_asm_elementwise(asm, "=r,l", [B_base + t * stride_B_t + two * 64], dtype=gl.int32, is_pure=False,
                              pack=1)
    gl.inline_asm_elementwise(asm, "=r,l", [C_base + t * stride_C_t + two * 64], dtype=gl.int32, is_pure=False,
                              pack=1)


@gluon.jit
def _load_decays(decays, s0, length, i_r, j_c, CHUNK: gl.constexpr, SUB: gl.constexpr):
    """The sub-chunk at s0's dt and cumsums (the preparation launch's), as columns and as rows of the products'
    layout, and the cumsum at its last token."""
    dt_r, cs_r, last = _load_row_decays(decays, s0, length, i_r, CHUNK, SUB)
    return gl.load(decays + s0 + j_c), gl.load(decays + CHUNK + s0 + j_c), dt_r, cs_r, last


@gluon.jit
def _load_row_decays(decays, s0, length, i_r, CHUNK: gl.constexpr, SUB: gl.constexpr):
    return (gl.load(decays + s0 + i_r), gl.load(decays + CHUNK + s0 + i_r),
            gl.load(decays + CHUNK + gl.minimum(s0 + SUB, length) - 1))


@gluon.jit
def _gluon_late_kernel(x_ptr, B_ptr, C_ptr, y_ptr, decays_ptr, counter_ptr, flag_ptr, slot_ptr,
                       batch, seqlen, nheads, heads_per_group, n_programs,
                       stride_x_b, stride_x_t, stride_x_h, stride_B_b, stride_B_t, stride_B_g,
                       stride_C_b, stride_C_t, stride_C_g, stride_y_b, stride_y_t, stride_y_h,
                       CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr, BLOCK_N: gl.constexpr,
                       EARLY_CB: gl.constexpr = False, PREFETCH: gl.constexpr = False,
                       STORE_DIRECT: gl.constexpr = False, DECAYS_AHEAD: gl.constexpr = False):
    acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_P, 16])
    op_a: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc, k_width=2)
    rows: gl.constexpr = gl.SliceLayout(1, acc)
    cols: gl.constexpr = gl.SliceLayout(0, acc)
    out_l: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    dtype: gl.constexpr = x_ptr.dtype.element_ty
    sl_p: gl.constexpr = gl.NVMMASharedLayout.get_default_for([SUB, BLOCK_P], dtype)
    sl_n: gl.constexpr = gl.NVMMASharedLayout.get_default_for([SUB, BLOCK_N], dtype)
    sl_h: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, BLOCK_P], dtype)

    # the ticket: launch order (the program with the last one puts the counter back to 0)
    ticket = gl.atomic_add(counter_ptr, 1)
    if ticket == n_programs - 1:
        gl.atomic_xchg(counter_ptr, 0)
    h = ticket % nheads
    rest = ticket // nheads
    b = rest % batch
    k = rest // batch
    g = h // heads_per_group
    start = (k * CHUNK).to(gl.int64)
    length = gl.minimum(seqlen - k * CHUNK, CHUNK)
    n_chunks = gl.cdiv(seqlen, CHUNK)
    chain = b * nheads + h

    x_base = x_ptr + b.to(gl.int64) * stride_x_b + h.to(gl.int64) * stride_x_h + start * stride_x_t
    B_base = B_ptr + b.to(gl.int64) * stride_B_b + g.to(gl.int64) * stride_B_g + start * stride_B_t
    C_base = C_ptr + b.to(gl.int64) * stride_C_b + g.to(gl.int64) * stride_C_g + start * stride_C_t
    y_base = y_ptr + b.to(gl.int64) * stride_y_b + h.to(gl.int64) * stride_y_h + start * stride_y_t
    decays = decays_ptr + (rest.to(gl.int64) * nheads + h) * (2 * CHUNK)

    x_sm = gl.allocate_shared_memory(dtype, [2, SUB, BLOCK_P], sl_p)
    B_sm = gl.allocate_shared_memory(dtype, [2, SUB, BLOCK_N], sl_n)
    C_sm = gl.allocate_shared_memory(dtype, [2, SUB, BLOCK_N], sl_n)
    xw_sm = gl.allocate_shared_memory(dtype, [SUB, BLOCK_P], sl_p)
    H_sm = gl.allocate_shared_memory(dtype, [BLOCK_N, BLOCK_P], sl_h)

    _issue_loads(x_sm.index(0), B_sm.index(0), C_sm.index(0), x_base, B_base, C_base, 0, length,
                 stride_x_t, stride_B_t, stride_C_t, SUB, BLOCK_P, BLOCK_N)

    # the state entering the span: [BLOCK_N, BLOCK_P], from the previous span of the chain
    n_r = gl.arange(0, BLOCK_N, layout=rows)
    p_c = gl.arange(0, BLOCK_P, layout=cols)
    slot = slot_ptr + chain.to(gl.int64) * (BLOCK_N * BLOCK_P) + n_r[:, None] * BLOCK_P + p_c[None, :]
    if k > 0:
        seen = gl.atomic_add(flag_ptr + chain, 0, sem="acquire")
        while seen != k:
            seen = gl.atomic_add(flag_ptr + chain, 0, sem="acquire")
        H = gl.load(slot, cache_modifier=".cg")
    else:
        H = gl.zeros([BLOCK_N, BLOCK_P], gl.float32, acc)
    H_sm.store(H.to(dtype))

    i_r = gl.arange(0, SUB, layout=rows)
    j_c = gl.arange(0, SUB, layout=cols)
    causal = i_r[:, None] >= j_c[None, :]
    zero = gl.zeros([SUB, BLOCK_P], gl.float32, acc)
    t_o = gl.arange(0, SUB, layout=gl.SliceLayout(1, out_l))
    p_o = gl.arange(0, BLOCK_P, layout=gl.SliceLayout(0, out_l))
    n_sub = gl.cdiv(length, SUB)
    if DECAYS_AHEAD:
        dt_r_n, cs_r_n, last_n = _load_row_decays(decays, 0, length, i_r, CHUNK, SUB)
    if EARLY_CB:  # the first sub-chunk's C.B^T before the loop; each iteration issues the next one's at its end
        async_copy.wait_group(0)
        _barrier()
        hopper.fence_async_shared()
        cb_next = hopper.warpgroup_mma(C_sm.index(0), B_sm.index(0).permute((1, 0)), zero, use_acc=False,
                                       is_async=True)
    for it in range(n_sub):
        s0 = it * SUB
        st = it % 2
        # the next sub-chunk's rows into the other stage (its last reader, the previous iteration, is done);
        # the last iteration loads its own rows again, so that every iteration waits for the same group count
        nxt = gl.minimum(s0 + SUB, (n_sub - 1) * SUB)
        _issue_loads(x_sm.index(1 - st), B_sm.index(1 - st), C_sm.index(1 - st), x_base, B_base, C_base, nxt,
                     length, stride_x_t, stride_B_t, stride_C_t, SUB, BLOCK_P, BLOCK_N)
        if PREFETCH:  # the rows two sub-chunks ahead into L2
            _prefetch_rows(x_base, B_base, C_base, gl.minimum(s0 + 2 * SUB, length - 1), length, stride_x_t,
                           stride_B_t, stride_C_t, SUB)
        if not EARLY_CB:
            async_copy.wait_group(1)
        _barrier()
        hopper.fence_async_shared()
        x_s = x_sm.index(st)
        B_s = B_sm.index(st)
        C_s = C_sm.index(st)
        if DECAYS_AHEAD:  # the rows' values and the last cumsum loaded an iteration ago (the columns' now: they are
            # used after the first wait, and 32 registers more would spill)
            dt_r, cs_r, last = dt_r_n, cs_r_n, last_n
            dt_c = gl.load(decays + s0 + j_c)
            cs_c = gl.load(decays + CHUNK + s0 + j_c)
            dt_r_n, cs_r_n, last_n = _load_row_decays(decays, nxt, length, i_r, CHUNK, SUB)
        else:
            last = gl.load(decays + CHUNK + gl.minimum(s0 + SUB, length) - 1)
        H = H * gl.exp(last)  # (before the products are issued: ptxas waits for every product in flight before a
        # product whose accumulator registers were written after the last ones were issued)
        if EARLY_CB:
            cb = cb_next
        else:
            cb = hopper.warpgroup_mma(C_s, B_s.permute((1, 0)), zero, use_acc=False, is_async=True)
        y0 = hopper.warpgroup_mma(C_s, H_sm, zero, use_acc=False, is_async=True)

        if not DECAYS_AHEAD:
            dt_c, cs_c, dt_r, cs_r, last = _load_decays(decays, s0, length, i_r, j_c, CHUNK, SUB)
        # the state update's operand w x, and the update itself (it needs only H and the loads)
        x_r = x_s.load(acc).to(gl.float32)
        xw_sm.store((x_r * (gl.exp(last - cs_r) * dt_r)[:, None]).to(dtype))
        hopper.fence_async_shared()
        _barrier()
        upd = hopper.warpgroup_mma(B_s.permute((1, 0)), xw_sm, H, is_async=True)

        cb = hopper.warpgroup_mma_wait(num_outstanding=2, deps=[cb])
        m = cb * gl.exp(gl.where(causal, cs_r[:, None] - cs_c[None, :], -float("inf"))) * dt_c[None, :]
        m_hi = m.to(dtype)
        m_lo = (m - m_hi.to(gl.float32)).to(dtype)
        y0 = hopper.warpgroup_mma_wait(num_outstanding=1, deps=[y0])
        y = y0 * gl.exp(cs_r)[:, None]
        y = hopper.warpgroup_mma(gl.convert_layout(m_hi, op_a), x_s, y, is_async=True)
        y = hopper.warpgroup_mma(gl.convert_layout(m_lo, op_a), x_s, y, is_async=True)
        y, H = hopper.warpgroup_mma_wait(num_outstanding=0, deps=[y, upd])
        if EARLY_CB:  # the next sub-chunk's C.B^T runs while this one's state and output are written
            async_copy.wait_group(0)
            _barrier()
            hopper.fence_async_shared()
            cb_next = hopper.warpgroup_mma(C_sm.index(1 - st), B_sm.index(1 - st).permute((1, 0)), zero,
                                           use_acc=False, is_async=True)
        H_sm.store(H.to(dtype))
        if STORE_DIRECT:  # from the products' layout: 4-byte pieces, no move through shared memory
            t = s0 + i_r
            gl.store(y_base + t[:, None] * stride_y_t + p_c[None, :], y.to(dtype), mask=(t < length)[:, None])
        else:
            t = s0 + t_o
            gl.store(y_base + t[:, None] * stride_y_t + p_o[None, :], gl.convert_layout(y.to(dtype), out_l),
                     mask=(t < length)[:, None])
    async_copy.wait_group(0)
    if EARLY_CB:
        hopper.warpgroup_mma_wait(num_outstanding=0, deps=[cb_next])

    is_last = k + 1 == n_chunks
    if is_last:
        if k > 0:
            gl.atomic_xchg(flag_ptr + chain, 0)
    else:
        gl.store(slot, H)
        _barrier()
        gl.atomic_xchg(flag_ptr + chain, k + 1, sem="release")


def launch_gluon(x, dt, A, B, C, chunk_size=256, group=None, **switches):
    """y of ssd_scan(x, dt, A, B, C) (no options) by the Gluon sweep, late publish; `group` chunks a program (the
    package's choice when None)."""
    from flashssm._runtime import workspace
    from flashssm.ops.checks import check_ssd_scan
    from flashssm.ops.ssd import forward

    dims = check_ssd_scan(x, dt, A, B, C, chunk_size=chunk_size)
    assert dims.headdim == BLOCK_P and dims.dstate == BLOCK_N and x.dtype in (torch.bfloat16, torch.float16)
    assert dims.cu_seqlens is None and x.stride(-1) == 1 and B.stride(-1) == 1 and C.stride(-1) == 1
    group = group or forward._group(dims, forward._resident_programs(x.device))
    chunk = dims.chunk_size * group
    n_rows = forward._chunk_rows(dims, chunk)
    decays = forward._decays(dims, SUB, chunk, n_rows, x, dt, A, None, False)
    n_programs = n_rows * dims.nheads
    counter, flag, slots = workspace(x.device).get(dims.batch * dims.nheads, BLOCK_P * BLOCK_N, torch.float32)
    y = torch.empty_like(x)
    _gluon_late_kernel[(n_programs,)](
        x, B, C, y, decays, counter, flag, slots, dims.batch, dims.seqlen, dims.nheads,
        dims.nheads // dims.ngroups, n_programs, x.stride(0), x.stride(1), x.stride(2), B.stride(0), B.stride(1),
        B.stride(2), C.stride(0), C.stride(1), C.stride(2), y.stride(0), y.stride(1), y.stride(2),
        CHUNK=chunk, SUB=SUB, BLOCK_P=BLOCK_P, BLOCK_N=BLOCK_N, num_warps=4, **switches)
    return y


def offline(sass_path=None, flags=None):
    """Compile for sm_90 without a GPU (8x4K's specialisation) and print registers, spills, shared memory and the
    SASS mix."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from benchmarks.offline_ssd_forward import resource_report

    names = _gluon_late_kernel.arg_names
    sig, consts = {}, {"CHUNK": 2048, "SUB": SUB, "BLOCK_P": BLOCK_P, "BLOCK_N": BLOCK_N, "EARLY_CB": False,
                       "PREFETCH": False, "STORE_DIRECT": False, "DECAYS_AHEAD": False,
                       **(flags or {})}
    values = {"batch": 8, "seqlen": 4096, "nheads": 80, "heads_per_group": 80, "n_programs": 8 * 2 * 80,
              "stride_x_b": 4096 * 5120, "stride_x_t": 5120, "stride_x_h": 64, "stride_B_b": 4096 * 128,
              "stride_B_t": 128, "stride_B_g": 128, "stride_C_b": 4096 * 128, "stride_C_t": 128, "stride_C_g": 128,
              "stride_y_b": 4096 * 5120, "stride_y_t": 5120, "stride_y_h": 64}
    attrs = {}
    for i, name in enumerate(names):
        if name in consts:
            sig[name] = "constexpr"
        elif name.endswith("_ptr"):
            sig[name] = {"decays_ptr": "*fp32", "slot_ptr": "*fp32", "counter_ptr": "*i32",
                         "flag_ptr": "*i32"}.get(name, "*bf16")
            attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            sig[name] = "i32"
            if values[name] % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    src = GluonASTSource(_gluon_late_kernel, sig, consts, attrs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    keys = ("HGMMA", "WARPGROUP", "MUFU", "LDG", "STG", "LDGSTS", "LDS", "STS", "LDSM", "BAR", "SHFL", "FFMA", "FMUL")
    mix, regs, spills = resource_report(k, keys, sass_path=sass_path)
    print(f"registers {regs}, spilled {spills} B, shared {k.metadata.shared} B\n{mix}")


VARIANTS = {  # name: the kernel's switches
    "gluon": {},
    "early-cb": {"EARLY_CB": True},
    "decays-ahead": {"DECAYS_AHEAD": True},
    "early-cb+decays": {"EARLY_CB": True, "DECAYS_AHEAD": True},
}
# measured slower (call 2): PREFETCH (L2 prefetch two sub-chunks ahead: 8x4K 0.576 -> 0.670 ms), STORE_DIRECT (y from
# the products' layout, 4-byte pieces: 0.576 -> 0.696)


def _flags(text):
    return {name: True for name in text.split(",") if name}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--flags", default="", help="offline: switches on, comma-separated (EARLY_CB,PREFETCH,...)")
    parser.add_argument("--sass")
    parser.add_argument("--workload", action="append")
    parser.add_argument("--variant", action="append", help=f"of {list(VARIANTS)} (default: all)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--profile", help="one launch of the default variant on this workload (for ncu)")
    args = parser.parse_args()
    if args.offline:
        offline(args.sass, _flags(args.flags))
        return
    from triton.testing import do_bench

    from flashssm.bench.workloads import WORKLOADS
    from flashssm.ops.checks import check_ssd_scan
    from flashssm.ops.ssd import forward
    from flashssm.ops.ssd.reference import ssd_scan_chunked

    if args.profile:
        inp = WORKLOADS[args.profile].make_inputs("cuda")
        for _ in range(2):
            launch_gluon(*(inp[k] for k in ("x", "dt", "A", "B", "C")), **VARIANTS[(args.variant or ["gluon"])[0]])
        torch.cuda.synchronize()
        return
    variants = args.variant or list(VARIANTS)
    # correctness on odd cases first: a ragged last sub-chunk, two groups, several chains waiting on each other
    torch.manual_seed(0)
    for (bsz, seqlen, nheads, ngroups, group) in ((2, 1000, 4, 2, 2), (3, 4096, 8, 1, 8), (1, 640, 2, 1, 1)):
        x = torch.randn(bsz, seqlen, nheads, 64, device="cuda", dtype=torch.bfloat16)
        dt = torch.rand(bsz, seqlen, nheads, device="cuda") * 0.1
        A = -torch.rand(nheads, device="cuda") * 4
        B = torch.randn(bsz, seqlen, ngroups, 128, device="cuda", dtype=torch.bfloat16)
        C = torch.randn(bsz, seqlen, ngroups, 128, device="cuda", dtype=torch.bfloat16)
        ref = ssd_scan_chunked(x.double(), dt.double(), A.double(), B.double(), C.double(), chunk_size=256)[0]
        dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256)
        cfg = forward.pick_config(dims, x.dtype, x.device)
        cfg = forward.dataclasses.replace(cfg, early_publish=False, group=group, prefetch=True)
        y_tr = forward.launch(dims, x, dt, A, B, C, config=cfg)[0]
        rel = lambda a: ((a.double() - ref).norm() / ref.norm()).item()  # noqa: E731
        line = f"check b{bsz} t{seqlen} h{nheads} g{ngroups} group {group}: triton {rel(y_tr):.3e}"
        for v in variants:
            y = launch_gluon(x, dt, A, B, C, group=group, **VARIANTS[v])
            line += (f" | {v} {rel(y):.3e}, max |- triton| {(y.float() - y_tr.float()).abs().max().item():.1e}"
                     f"{' NaN' if torch.isnan(y).any() else ''}")
        print(line)
        sys.stdout.flush()

    for name in args.workload or ["2.7b-8x4K", "2.7b-32x2K"]:
        w = WORKLOADS[name]
        inp = w.make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        dims = check_ssd_scan(x, dt, A, B, C, chunk_size=w.chunk_size)
        cfg = forward.pick_config(dims, x.dtype, x.device)
        fns = {"triton": lambda: forward.launch(dims, x, dt, A, B, C, config=cfg)[0]}
        for v in variants:
            fns[v] = (lambda f: lambda: launch_gluon(x, dt, A, B, C, chunk_size=w.chunk_size, group=cfg.group,
                                                     **f))(VARIANTS[v])
        y_tr = fns["triton"]()
        diffs = {v: (fns[v]().float() - y_tr.float()).abs().max().item() for v in variants}
        times = {k: [] for k in fns}
        for _ in range(args.reps):
            for k, fn in fns.items():
                times[k].append(do_bench(fn, warmup=25, rep=200, return_mode="median"))
        med = {k: sorted(t)[len(t) // 2] for k, t in times.items()}
        print(f"{name} (late {not cfg.early_publish}, group {cfg.group}): triton {med['triton']:.4f} ms | "
              + " | ".join(f"{v} {med[v]:.4f} ({med[v] / med['triton'] - 1:+.1%}, max |diff| {diffs[v]:.1e})"
                           for v in variants))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
