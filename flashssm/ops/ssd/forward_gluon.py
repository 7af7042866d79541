"""ssd_scan forward on Hopper: the output sweep in Gluon with asynchronous wgmma, late or early publish.

The Triton kernel (forward.py) is latency-bound: Triton 3.6 issues each of the sweep's five products a sub-chunk and
waits for it at once, so with two programs an SM the tensor pipe idles most of the time. Gluon states the products'
issue and waits explicitly, so here they overlap with each other and with the elementwise work
(benchmarks/notes/ssd_forward.md, twenty-ninth to thirty-first sessions: on an H100 8x4K 0.708 -> 0.566 ms, 1x128K
3.547 -> 3.105; then 6-9 % more on an H200 from the sub-chunk's dt and cumsums by cp.async with its rows, and y moved
to the stores' layout in 16 bits):

    end of the previous sub-chunk:  C.B^T of this one issued (its rows, dt and cumsums arrived by cp.async an
                                    iteration earlier)
    wait for C.B^T; C.H (H: the running state, 16-bit in shared memory) issued
    w x (w_j = exp(last - cs_j) dt_j) into shared memory; the state update B^T (w x) + e^last H issued
    the masked decay matrix m = C.B^T o exp(cs_i - cs_j) o dt_j, split m_hi + m_lo (16 bits each)
    wait for C.H: y = e^cs C.H, then m_hi x and m_lo x accumulated on it, issued
    wait for all: the next sub-chunk's C.B^T issued; H to shared memory; D, the gate and y's stores

Late publish (many chains): wait for the state entering the span, the sweep, hand on the state it ends with. Early
publish (few chains, e.g. batch 1): first the span's own state (`_own_state`, or `_own_state3` with a third stage
where y moves in 16 bits: x and B by cp.async, one product a sub-chunk, accumulating without waits), then wait, hand
on H e^total + S at once, then the sweep. The math, the ticket
order, the hand-over (one slot and one counted flag per chain) and the roundings are those of the Triton kernel's,
so the late sweep gives its bits; the early own state weights each token to the span's end at once (other roundings
of w x, the same math). It covers what the usual calls need on Hopper: 16-bit (bf16 or fp16) x, B and C with unit
inner strides, headdim a multiple of 64, dstate 64 or 128, chunks a multiple of 64 tokens; D, z (and y before the
gate), dt_bias / softplus / limits (in the preparation launch), initial and final states in any state dtype; packed
sequences (`cu_seqlens`: a program's span from the Triton kernel's table, `IS_VARLEN`) unless one of them is empty.
fp16 has 5 exponent bits: with dt near 0 the computed operands (H, w x, m) would be subnormals and lose their digits,
and large states would round to inf, so its form takes each over a power of two at or above its largest value
(`_pow2_at_least`; m row by row, w x and H a sub-chunk at a time, the own state's unit only growing) and multiplies
the product back; bf16 takes the plain products (the same SASS as before the fp16 form). Everything else (fp32
inputs, an empty packed sequence, the states a backward in sweeps takes), and any GPU without wgmma, takes the
Triton kernel; `blocker` says which applies. With STORE_STATES it also stores the state entering every
chunk of the tiles backward (`forward.sweep_states`; packed: at the rows `forward.varlen_state_rows` gives), which
that backward then need not recompute (from the 16-bit copy in shared memory; fp16's copy is over a power of two,
stored beside it: the tiles' scaled states, `forward.new_states`). The interpreter cannot
run Gluon, so CPU tests cover the dispatch and the offline compile (no wgmma serialised by ptxas); the GPU tests
compare this kernel with the Triton one and with float64.
"""

from __future__ import annotations

import os

import torch

from flashssm import _runtime
from flashssm.ops.triton_common import LOG2E

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia import hopper
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
except ImportError:  # a Triton without Gluon: the Triton kernel serves every call
    gluon = None

# Off with FLASHSSM_GLUON=0 (every call then takes the Triton kernel).
ENABLED = os.environ.get("FLASHSSM_GLUON", "1") != "0"

SUB = 64       # tokens a sub-chunk
BLOCK_P = 64   # headdim a program
CAPABILITY = (9, 0)  # wgmma: Hopper (sm_90) only
# The late publish's rows by the tensor memory accelerator where `tma_descriptors` allows: True, in the launches that
# store the states for the backward (a training forward, with TMA_STATES: 8 x 4K's kernel -11.6 to -12.6 %, the
# call's kernels -1.8 to -2.4 %, H200); "always", in every launch it can serve (the forward alone's kernel -1.3 to
# +1.9 %: the sixty-eighth session's +15 % at 8 x 4K was its unprepared host path); False, none
# (benchmarks/notes/ssd_forward.md, sixty-eighth and sixty-ninth sessions).
TMA = True
# With TMA, the training forward's entering states stored from shared memory by the tensor memory accelerator too (bf16,
# whose stored states are H's 16 bits as the sweep holds them).
TMA_STATES = True
# The late publish in balanced pieces (`forward.balanced_pieces`): one program a slot (two an SM), each sweeping about
# the same share of the chains, instead of a program a span of GROUP chunks in waves whose last is part empty (8 x 4K:
# 1280 spans for 264 slots, 4.85 waves). Only in the TMA form (`tma_blocker(pieces=True)`, whatever TMA's True
# serves): with cp.async the pieces' loop kept the rows' addresses in vector registers (offline, sm_90: the plain
# loop 935 -> 964 instructions; the TMA form's 950 -> 943). False: the waves (A/B).
PIECES = False
# The slots of the balanced pieces (None: the programs the GPU holds at once, two an SM); fewer for tests at small
# shapes (two chains a slot at least).
PIECES_SLOTS = None
# The sweep launched by programmatic dependent launch (PDL, Hopper): it may start while the preparation launch still
# runs (which lets it go at its own start: `forward._decays`), its programs taking their tickets and issuing their first
# x, B and C rows before they wait for that launch's end (`_wait_prior_grid`). False: it starts after that end (A/B).
PDL = False


def blocker(dims, x, B, C, z, *, output: bool, stores_states: bool, capability) -> str | None:
    """None when a forward launch can take the Gluon kernel, else why not. `capability`: the GPU's compute capability
    (None off the GPU)."""
    if gluon is None:
        return "this Triton has no Gluon"
    if not ENABLED:
        return "FLASHSSM_GLUON=0"
    if capability is None or tuple(capability) != CAPABILITY:
        return f"Gluon's kernel is for compute capability {CAPABILITY} (wgmma), not {capability}"
    if torch.compiler.is_compiling():
        return "inside a torch.compile trace"
    if not output or stores_states:
        return "no output, or the states entering each chunk stored before its sweep: the Triton kernel's forms"
    if dims.cu_seqlens is not None and any(e == s for s, e in zip(dims.cu_seqlens, dims.cu_seqlens[1:])):
        return "packed sequences with an empty one (its one empty span hands the initial state on)"
    if not (x.dtype == B.dtype == C.dtype and x.dtype in (torch.bfloat16, torch.float16)):
        return "x, B and C must all be bf16 or all fp16"
    if dims.headdim % BLOCK_P or dims.dstate not in (64, 128) or dims.chunk_size % SUB or dims.seqlen < 1:
        return "headdim a multiple of 64, dstate 64 or 128, chunks a multiple of 64 tokens, seqlen >= 1"
    for name, t in (("x", x), ("B", B), ("C", C)):
        # cp.async moves 16-byte pieces, which the compiler allows only where it knows each row's start is aligned:
        # from strides the JIT marks divisible by 16 (a multiple of 8 but not 16 failed to compile: "cp.async does not
        # support transfers smaller than 4 bytes")
        if t.stride(-1) != 1 or t.data_ptr() % 16 or any(s % 16 for s in t.stride()[:-1]):
            return f"{name} needs a unit inner stride, other strides multiples of 16 and a 16-byte aligned start"
    if z is not None and z.stride(-1) != 1:
        return "z needs a unit inner stride"
    return None


def tma_blocker(dims, x, B, C, z, D, early: bool, states=None, pieces: bool = False) -> str | None:
    """None where a Gluon launch (one `blocker` admits) takes the TMA form, else why not: the late publish, dense
    sequences whose length is a multiple of SUB (no sub-chunk then crosses a sequence's end, so a 2-D view (batch x
    seqlen rows) serves: its rows past one sequence's end would be the next one's, not zeros), x's heads and B's and
    C's groups adjacent (one row of columns a token), rows addressable in 32 bits; y moved in 16 bits (no z, D per
    head if any: the fp32 move's scratch leaves no room for the stages' mbarriers within two programs an SM); with TMA
    True only where the launch stores `states` and in bf16 (what was measured and run on the GPU with stored states:
    fp16's scaled states beside TMA's loads have not been). `pieces`: for the balanced pieces (`PIECES`, whose loop
    is the TMA form's: with cp.async its addresses leave the uniform registers), any launch but fp16's storing states.
    The device is the caller's to check."""
    if not TMA:
        return "TMA is off"
    if pieces and states is not None and x.dtype != torch.bfloat16:
        return "fp16's scaled states beside TMA's loads have not been run"
    if TMA is True and not pieces and (states is None or x.dtype != torch.bfloat16):
        return "TMA True serves bf16 launches that store the states (TMA = 'always': every one it can)"
    if early or dims.cu_seqlens is not None:
        return "the early publish, or packed sequences"
    if dims.seqlen % SUB:
        return f"seqlen not a multiple of {SUB}: a sub-chunk would cross a sequence's end"
    if z is not None or (D is not None and D.dim() != 1):
        return "z, or D per element: y moves in fp32, whose scratch leaves no room for the mbarriers"
    if dims.batch * dims.seqlen >= 2**31:
        return "more than 2^31 rows"
    for name, t, inner in (("x", x, dims.headdim), ("B", B, dims.dstate), ("C", C, dims.dstate)):
        if (t.stride(0) != dims.seqlen * t.stride(1) and dims.batch > 1) or t.stride(2) != inner or t.stride(3) != 1:
            return f"{name}'s tokens are not rows of one 2-D view (sequences or heads/groups not adjacent)"
    return None


def tma_descriptors(dims, x, B, C, z, D, early: bool, states=None, pieces: bool = False):
    """(x_desc, B_desc, C_desc) for the kernel's TMA form where `tma_blocker` admits the launch, on CUDA tensors (a
    compile-ahead dry run on meta tensors plans the cp.async form); else None."""
    if x.device.type != "cuda" or tma_blocker(dims, x, B, C, z, D, early, states, pieces) is not None:
        return None
    rows = dims.batch * dims.seqlen
    return (_descriptor(x, rows, dims.nheads * dims.headdim, x.stride(1), [SUB, BLOCK_P]),
            _descriptor(B, rows, dims.ngroups * dims.dstate, B.stride(1), [SUB, dims.dstate]),
            _descriptor(C, rows, dims.ngroups * dims.dstate, C.stride(1), [SUB, dims.dstate]))


def _descriptor(t, rows: int, width: int, row_stride: int, block: list):
    """A 2-D tensor descriptor over t's memory (rows x width, unit inner stride) whose blocks land in the kernel's
    shared-memory layout for that block (Gluon's default for it, as the kernel allocates its stages)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for(block, gl.float16 if t.dtype == torch.float16 else gl.bfloat16)
    return TensorDescriptor(t, [rows, width], [row_stride, 1], block, layout)


def tma_states_descriptor(dims, x, states):
    """The stored states (chunk rows, nheads, dstate, headdim) as a 2-D view (rows x heads x dstate, headdim) for the
    TMA form's stores of H_sm as it is, or None: TMA_STATES, bf16 inputs and bf16 states (fp16's are scaled, with
    their units in the same buffer; fp32 states are not H_sm's bits)."""
    if not TMA_STATES or states is None or x.dtype != torch.bfloat16 or states.dtype != torch.bfloat16:
        return None
    rows, width = states.numel() // states.shape[-1], states.shape[-1]
    if rows >= 2**31 or not states.is_contiguous():
        return None
    return _descriptor(states, rows, width, width, [dims.dstate, BLOCK_P])


if gluon is not None:
    # Triton 3.6's names; 3.9 renamed cp.async to async_load (same arguments) and the CTA barrier to gl.barrier
    _async_load = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared
    _barrier = getattr(gl, "thread_barrier", None) or gl.barrier
    _tma_load = getattr(hopper.tma, "async_load", None) or hopper.tma.async_copy_global_to_shared
    _tma_store = getattr(hopper.tma, "async_store", None) or hopper.tma.async_copy_shared_to_global

    @gluon.jit
    def _wait_prior_grid():
        """griddepcontrol.wait: until the launch before this one (the preparation launch) has finished and its writes
        are visible; at once where this launch was not started early (`PDL`), and on any later call."""
        gl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=gl.int32, is_pure=False, pack=1)

    @gluon.jit
    def _issue_loads(x_st, B_st, C_st, dt_st, cs_st, x_base, B_base, C_base, decays, s0, length, stride_x_t, stride_B_t,
                     stride_C_t, CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr, BLOCK_N: gl.constexpr,
                     LOAD_C: gl.constexpr = True, WAIT: gl.constexpr = False):
        """cp.async of the sub-chunk at s0's x [SUB, BLOCK_P], B and (LOAD_C) C [SUB, BLOCK_N] rows (zeros past the
        span's end) and its dt and dt A cumsums [2, SUB] (fp32, one 4-byte piece a thread) into one stage, as one
        group. WAIT: the preparation launch's end is waited for between the two (`_wait_prior_grid`)."""
        ld_p: gl.constexpr = gl.BlockedLayout([1, 8], [32 * 8 // BLOCK_P, BLOCK_P // 8], [4, 1], [1, 0])
        ld_n: gl.constexpr = gl.BlockedLayout([1, 8], [32 * 8 // BLOCK_N, BLOCK_N // 8], [4, 1], [1, 0])
        t_p = s0 + gl.arange(0, SUB, layout=gl.SliceLayout(1, ld_p))
        p = gl.arange(0, BLOCK_P, layout=gl.SliceLayout(0, ld_p))
        _async_load(x_st, x_base + t_p[:, None] * stride_x_t + p[None, :], mask=(t_p < length)[:, None])
        t_n = s0 + gl.arange(0, SUB, layout=gl.SliceLayout(1, ld_n))
        n = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, ld_n))
        mask_n = (t_n < length)[:, None]
        _async_load(B_st, B_base + t_n[:, None] * stride_B_t + n[None, :], mask=mask_n)
        if LOAD_C:
            _async_load(C_st, C_base + t_n[:, None] * stride_C_t + n[None, :], mask=mask_n)
        if WAIT:
            _wait_prior_grid()
        i = s0 + gl.arange(0, SUB, layout=gl.BlockedLayout([1], [32], [4], [0]))
        _async_load(dt_st, decays + i)  # (s0 + SUB <= CHUNK)
        # the cumsums past the span's end repeat its last one (they meet only x's zero rows and y's unstored rows): the
        # stage's last entry is then the sub-chunk's last cumsum, whatever its length
        _async_load(cs_st, decays + CHUNK + gl.minimum(i, length - 1))
        async_copy.commit_group()

    @gluon.jit
    def _own_loads(x_st, B_st, dt_st, cs_st, x_base, B_base, decays, s0, length, stride_x_t, stride_B_t,
                   CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr, BLOCK_N: gl.constexpr):
        """`_issue_loads` for an own-state step: the sub-chunk at s0's x and B rows, dt and cumsums (no C)."""
        _issue_loads(x_st, B_st, B_st, dt_st, cs_st, x_base, B_base, B_base, decays, s0, length, stride_x_t, stride_B_t,
                     stride_B_t, CHUNK, SUB, BLOCK_P, BLOCK_N, False)

    @gluon.jit
    def _tma_loads(x_desc, B_desc, C_desc, x_st, B_st, C_st, dt_st, cs_st, bar, row, x_col, bc_col, decays, s0, length,
                   CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr, BLOCK_N: gl.constexpr,
                   WAIT: gl.constexpr = False):
        """`_issue_loads` by the tensor memory accelerator: x, B and C's rows of the sub-chunk at s0 (every one inside
        the sequence: `tma_descriptors`) as three copies that complete on `bar` (one thread issues them: no address
        arithmetic a row), dt and the cumsums by cp.async as one group, as before (WAIT: after `_wait_prior_grid`)."""
        NBYTES: gl.constexpr = (SUB * BLOCK_P + 2 * SUB * BLOCK_N) * (x_desc.dtype.primitive_bitwidth // 8)
        hopper.mbarrier.expect(bar, NBYTES)
        _tma_load(x_desc, [row + s0, x_col], bar, x_st)
        _tma_load(B_desc, [row + s0, bc_col], bar, B_st)
        _tma_load(C_desc, [row + s0, bc_col], bar, C_st)
        if WAIT:
            _wait_prior_grid()
        i = s0 + gl.arange(0, SUB, layout=gl.BlockedLayout([1], [32], [4], [0]))
        _async_load(dt_st, decays + i)
        _async_load(cs_st, decays + CHUNK + gl.minimum(i, length - 1))
        async_copy.commit_group()

    @gluon.jit
    def _own_state(x_sm, B_sm, dt_sm, cs_sm, xw_sm, x_base, B_base, decays, length, stride_x_t, stride_B_t,
                   CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr, BLOCK_N: gl.constexpr):
        """The span's own state (from a zero state at its start), [BLOCK_N, BLOCK_P] in the products' layout, and the
        sum of dt A over the span. Each token's term is weighted to the span's end at once,
        S = sum_j B_j^T exp(total - cum_j) dt_j x_j, so the products accumulate one after another into S with no
        rescaling between them (a rescale of S would wait for the product in flight). The sub-chunks go from the
        last to the first: the decay from a sub-chunk's end to the span's end is then the sum of the ones already
        done, exact, with no difference of large sums. x and B by cp.async one sub-chunk ahead, in the sweep's
        stages; w x through one shared buffer."""
        acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                      instr_shape=[16, BLOCK_P, 16])
        n_sub = gl.cdiv(length, SUB)
        _own_loads(x_sm.index(0), B_sm.index(0), dt_sm.index(0), cs_sm.index(0), x_base, B_base, decays,
                   (n_sub - 1) * SUB, length, stride_x_t, stride_B_t, CHUNK, SUB, BLOCK_P, BLOCK_N)
        # the last sub-chunk, from a zero state; then the others, each product accumulating on the previous one
        async_copy.wait_group(0)
        _barrier()
        S, after, unit = _own_step(x_sm, B_sm, dt_sm, cs_sm, xw_sm, x_base, B_base, decays, n_sub - 1, 0, length,
                                   0.0, gl.zeros([BLOCK_N, BLOCK_P], gl.float32, acc), 1.0, stride_x_t, stride_B_t,
                                   CHUNK, SUB, BLOCK_P, BLOCK_N, True)
        for it in range(1, n_sub):
            S = _own_wait(S, 0)
            S, after, unit = _own_step(x_sm, B_sm, dt_sm, cs_sm, xw_sm, x_base, B_base, decays, n_sub - 1 - it,
                                       it % 2, length, after, S, unit, stride_x_t, stride_B_t, CHUNK, SUB, BLOCK_P,
                                       BLOCK_N, False)
        # every thread is done with the stages before the output sweep loads into them
        return _own_wait(S, 0) * unit, after

    @gluon.jit
    def _own_wait(S, PENDING: gl.constexpr):
        """Before an own-state step: its rows have landed (at most PENDING later cp.async groups still in flight), the
        product in flight, which read w x and a stage, is done, and so is every thread's part of the previous step."""
        async_copy.wait_group(PENDING)
        S = hopper.warpgroup_mma_wait(num_outstanding=0, deps=[S])
        _barrier()
        return S

    @gluon.jit
    def _own_step(x_sm, B_sm, dt_sm, cs_sm, xw_sm, x_base, B_base, decays, sub, st, length, after, S, unit,
                  stride_x_t, stride_B_t, CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr,
                  BLOCK_N: gl.constexpr, FIRST: gl.constexpr):
        """One sub-chunk of `_own_state` (its rows in stage st, landed; the stage's other one and xw free): the
        previous sub-chunk's rows into the other stage, then S + B^T (w x) issued. Returns the product in flight, the
        decay sum from the sub-chunk's start to the span's end and the unit S is counted in (1 but with fp16:
        `_own_weights`)."""
        acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                      instr_shape=[16, BLOCK_P, 16])
        rows: gl.constexpr = gl.SliceLayout(1, acc)
        dtype: gl.constexpr = x_base.dtype.element_ty
        s0 = sub * SUB
        _own_loads(x_sm.index(1 - st), B_sm.index(1 - st), dt_sm.index(1 - st), cs_sm.index(1 - st), x_base, B_base,
                   decays, gl.maximum(s0 - SUB, 0), length, stride_x_t, stride_B_t, CHUNK, SUB, BLOCK_P, BLOCK_N)
        last = _last_cumsum(cs_sm, st, SUB)
        dt_r = dt_sm.index(st).load(rows)
        cs_r = cs_sm.index(st).load(rows)
        x_r = x_sm.index(st).load(acc).to(gl.float32)
        S, w, unit = _own_weights(S, dt_r, cs_r, dt_sm.index(st), cs_sm.index(st), after + last, unit, FIRST,
                                  dtype == gl.float16, BLOCK_P)
        xw_sm.store((x_r * w[:, None]).to(dtype))
        hopper.fence_async_shared()
        _barrier()
        S = hopper.warpgroup_mma(B_sm.index(st).permute((1, 0)), xw_sm, S, use_acc=not FIRST, is_async=True)
        return S, after + last, unit

    @gluon.jit
    def _own_state3(x_sm, B_sm, C_sm, xw_sm, dt_sm, cs_sm, wx_sm, x_base, B_base, decays, length, stride_x_t,
                    stride_B_t, CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr, BLOCK_N: gl.constexpr):
        """`_own_state` with three stages, the rows two sub-chunks ahead (a step here is one product, too short to
        cover one sub-chunk's load from DRAM: the largest wait at 1x128K with two stages). The third stage is xw_sm
        for x and C's first stage for B (idle until the output sweep: separate allocations, so that Triton's barrier
        analysis, which works on whole allocations, adds no barrier to the output sweep), w x goes to wx_sm (H's
        buffer, idle until then), and the steps are unrolled by three so that every stage index is a constant."""
        acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                      instr_shape=[16, BLOCK_P, 16])
        n_sub = gl.cdiv(length, SUB)
        _own_loads(x_sm.index(0), B_sm.index(0), dt_sm.index(0), cs_sm.index(0), x_base, B_base, decays,
                   (n_sub - 1) * SUB, length, stride_x_t, stride_B_t, CHUNK, SUB, BLOCK_P, BLOCK_N)
        _own_loads(x_sm.index(1), B_sm.index(1), dt_sm.index(1), cs_sm.index(1), x_base, B_base, decays,
                   gl.maximum(n_sub - 2, 0) * SUB, length, stride_x_t, stride_B_t, CHUNK, SUB, BLOCK_P, BLOCK_N)
        async_copy.wait_group(1)
        _barrier()
        S, after, unit = _own_step3(x_sm, B_sm, C_sm, xw_sm, dt_sm, cs_sm, wx_sm, x_base, B_base, decays, n_sub, 0,
                                    length, 0.0, gl.zeros([BLOCK_N, BLOCK_P], gl.float32, acc), 1.0, stride_x_t,
                                    stride_B_t, CHUNK, SUB, BLOCK_P, BLOCK_N, 0, True)
        for i0 in range(1, n_sub, 3):  # (the next step's rows may still be in flight at each wait)
            S = _own_wait(S, 1)
            S, after, unit = _own_step3(x_sm, B_sm, C_sm, xw_sm, dt_sm, cs_sm, wx_sm, x_base, B_base, decays, n_sub,
                                        i0, length, after, S, unit, stride_x_t, stride_B_t, CHUNK, SUB, BLOCK_P,
                                        BLOCK_N, 1, False)
            if i0 + 1 < n_sub:
                S = _own_wait(S, 1)
                S, after, unit = _own_step3(x_sm, B_sm, C_sm, xw_sm, dt_sm, cs_sm, wx_sm, x_base, B_base, decays,
                                            n_sub, i0 + 1, length, after, S, unit, stride_x_t, stride_B_t, CHUNK, SUB,
                                            BLOCK_P, BLOCK_N, 2, False)
            if i0 + 2 < n_sub:
                S = _own_wait(S, 1)
                S, after, unit = _own_step3(x_sm, B_sm, C_sm, xw_sm, dt_sm, cs_sm, wx_sm, x_base, B_base, decays,
                                            n_sub, i0 + 2, length, after, S, unit, stride_x_t, stride_B_t, CHUNK, SUB,
                                            BLOCK_P, BLOCK_N, 0, False)
        # every thread is done with the stages before the output sweep loads into them
        return _own_wait(S, 0) * unit, after

    @gluon.jit
    def _own_step3(x_sm, B_sm, C_sm, xw_sm, dt_sm, cs_sm, wx_sm, x_base, B_base, decays, n_sub, i, length, after, S,
                   unit, stride_x_t, stride_B_t, CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr,
                   BLOCK_N: gl.constexpr, ST: gl.constexpr, FIRST: gl.constexpr):
        """Step i of `_own_state3` (stage ST = i % 3, its rows landed; the stage of step i - 1 and wx free): the rows
        of step i + 2 into that free stage, then S + B^T (w x) issued."""
        acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                      instr_shape=[16, BLOCK_P, 16])
        rows: gl.constexpr = gl.SliceLayout(1, acc)
        dtype: gl.constexpr = x_base.dtype.element_ty
        AHEAD: gl.constexpr = (ST + 2) % 3
        if AHEAD == 2:
            _own_loads(xw_sm, C_sm.index(0), dt_sm.index(2), cs_sm.index(2), x_base, B_base, decays,
                       gl.maximum(n_sub - i - 3, 0) * SUB, length, stride_x_t, stride_B_t, CHUNK, SUB, BLOCK_P, BLOCK_N)
        else:
            _own_loads(x_sm.index(AHEAD), B_sm.index(AHEAD), dt_sm.index(AHEAD), cs_sm.index(AHEAD), x_base, B_base,
                       decays, gl.maximum(n_sub - i - 3, 0) * SUB, length, stride_x_t, stride_B_t, CHUNK, SUB, BLOCK_P,
                       BLOCK_N)
        last = _last_cumsum(cs_sm, ST, SUB)
        dt_r = dt_sm.index(ST).load(rows)
        cs_r = cs_sm.index(ST).load(rows)
        if ST == 2:
            x_r = xw_sm.load(acc).to(gl.float32)
        else:
            x_r = x_sm.index(ST).load(acc).to(gl.float32)
        S, w, unit = _own_weights(S, dt_r, cs_r, dt_sm.index(ST), cs_sm.index(ST), after + last, unit, FIRST,
                                  dtype == gl.float16, BLOCK_P)
        wx_sm.store((x_r * w[:, None]).to(dtype))
        hopper.fence_async_shared()
        _barrier()
        if ST == 2:
            S = hopper.warpgroup_mma(C_sm.index(0).permute((1, 0)), wx_sm, S, use_acc=not FIRST, is_async=True)
        else:
            S = hopper.warpgroup_mma(B_sm.index(ST).permute((1, 0)), wx_sm, S, use_acc=not FIRST, is_async=True)
        return S, after + last, unit

    @gluon.jit
    def _pow2_at_least(v):
        """The power of two at or above v (fp32, v >= 0), held within [2^-60, 2^60] (a ratio of two stays finite): the
        scale a computed operand is divided by before its fp16 rounding (its largest magnitude then in (1/2, 1]) and
        its product multiplied by after; a power of two, so both are exact in fp32."""
        v = gl.minimum(gl.maximum(v, 8.673617379884035e-19), 1.152921504606847e18)
        return ((v.to(gl.int32, bitcast=True) + 0x007FFFFF) & 0x7F800000).to(gl.float32, bitcast=True)

    @gluon.jit
    def _abs_max(H):
        """The largest |value| of a 2-D tile (Gluon's reduction across the warps)."""
        return gl.max(gl.max(gl.abs(H), axis=1), axis=0)

    @gluon.jit
    def _own_weights(S, dt_r, cs_r, dt_st, cs_st, to_end, unit, FIRST: gl.constexpr, FP16: gl.constexpr,
                     BLOCK_P: gl.constexpr):
        """An own-state step's weights w (rows' layout) of its tokens to the span's end, exp(to_end - cs) dt, and S and
        the unit it is counted in. With fp16 inputs and dt near 0 (~1e-6) w x would be fp16 subnormals and lose its
        digits (benchmarks/notes/ssd_forward.md, fifty-second session), so there w is divided by the power of two at
        or above its largest magnitude (from the same weights in the columns' layout, which every warp holds whole: a
        reduction within each warp, no shared memory), and S, which the product accumulates on, is recounted in that
        unit (it is waited for: no product in flight reads it)."""
        w = gl.exp(to_end - cs_r) * dt_r
        if FP16:
            acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                          instr_shape=[16, BLOCK_P, 16])
            cols: gl.constexpr = gl.SliceLayout(0, acc)
            # (|w|: a dt_limit below 0 lets dt, and w, below 0)
            scale = _pow2_at_least(gl.max(gl.abs(gl.exp(to_end - cs_st.load(cols)) * dt_st.load(cols)), axis=0))
            if not FIRST:
                # the unit only grows (S's terms stay within fp16's reach of its largest), and S is recounted only then
                scale = gl.maximum(scale, unit)
                if scale != unit:
                    S = S * (unit / scale)
            w = w * (1.0 / scale)
            unit = scale
        return S, w, unit

    @gluon.jit
    def _ex2(x):
        """2^x by ex2.approx.ftz, the MUFU alone (gl.exp's ex2.approx without ftz takes five instructions)."""
        return gl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True,
                                         pack=1)

    @gluon.jit
    def _h_rows_max(hmax_sm, BLOCK_N: gl.constexpr):
        """The largest of the BLOCK_N rows' maxima in hmax_sm (written before a barrier), in every thread: each warp
        reads all of them (BLOCK_N // 32 a lane), so the reduction stays within the warp (Gluon's own reduction of H
        across the warps took two more barriers a sub-chunk)."""
        whole: gl.constexpr = gl.BlockedLayout([BLOCK_N // 32], [32], [4], [0])  # (the warps hold copies)
        return gl.max(hmax_sm.load(whole), axis=0)

    @gluon.jit
    def _last_cumsum(cs_sm, st, SUB: gl.constexpr):
        """The last cumsum of stage st's sub-chunk, a scalar: its entry SUB - 1 (`_issue_loads` repeats the last one
        past the span's end), read by every thread. (A load from global memory here shared a scoreboard with the
        loop's shared-memory loads, so the loop waited for it where they were needed: ncu, 1x128K.)"""
        one: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        return gl.sum(cs_sm.index(st).slice(SUB - 1, 1).load(one), axis=0)

    @gluon.jit
    def _sweep_span(
        x_ptr, B_ptr, C_ptr, D_ptr, z_ptr, init_ptr, y_ptr, ypre_ptr, final_ptr, flag_ptr, slot_ptr, states_ptr,
        state_rows_ptr, scale_ptr, batch, seqlen, nheads, n_pblocks, stride_x_b, stride_x_t, stride_x_h, stride_B_b,
        stride_B_t, stride_B_g, stride_C_b, stride_C_t, stride_C_g, stride_z_b, stride_z_t, stride_z_h, stride_y_b,
        stride_y_t, stride_y_h, stride_D_h, stride_D_p, stride_init_s, stride_init_h, stride_init_p, stride_init_n,
        stride_final_s, stride_final_h, stride_final_p, stride_final_n, x_desc, B_desc, C_desc, states_desc, x_sm, B_sm,
        C_sm, xw_sm, H_sm, dt_sm, cs_sm, hmax_sm, bars, b, h, g, seq, k, start, length, n_chunks, chain, pb, rest,
        decays, CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr, BLOCK_N: gl.constexpr, HAS_D:
        gl.constexpr, HAS_Z: gl.constexpr, STORE_YPRE: gl.constexpr, HAS_INIT: gl.constexpr, STORE_FINAL: gl.constexpr,
        EARLY: gl.constexpr, D_HEAD: gl.constexpr, STORE_STATES: gl.constexpr, STATE_CHUNK: gl.constexpr, IS_VARLEN:
        gl.constexpr, TMA: gl.constexpr, TMA_STATES: gl.constexpr, PIECES: gl.constexpr, MOVE_16: gl.constexpr,
        OWN_STAGES: gl.constexpr, H_ROWS: gl.constexpr, PDL: gl.constexpr
    ):
        """One span of a chain (sequence seq at batch row b, head h of group g, headdim block pb; its `length` tokens
        from `start`, piece or span k of n_chunks, `decays` its dt and cumsums): wait for the state entering it (k >
        0), sweep it, hand the state on or store the final one. The shared buffers are the kernel's; see
        `_ssd_fwd_gluon_kernel` for the forms."""
        acc: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                      instr_shape=[16, BLOCK_P, 16])
        op_a: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc, k_width=2)
        rows: gl.constexpr = gl.SliceLayout(1, acc)
        cols: gl.constexpr = gl.SliceLayout(0, acc)
        out_l: gl.constexpr = gl.BlockedLayout([1, 8], [32 * 8 // BLOCK_P, BLOCK_P // 8], [4, 1], [1, 0])
        dtype: gl.constexpr = x_ptr.dtype.element_ty
        # fp16: the computed operands (H for C.H, w x for the update, m for m x) go into the products divided by a
        # power of two at or above their largest values, and the products come out multiplied by it (with dt near 0
        # they would be fp16 subnormals; bf16 has fp32's exponents: `_pow2_at_least`)
        FP16: gl.constexpr = dtype == gl.float16

        p0 = pb * BLOCK_P

        # int64 bases: (token * stride) passes 2^31 on long inputs
        x_base = x_ptr + b.to(gl.int64) * stride_x_b + h.to(gl.int64) * stride_x_h + start * stride_x_t + p0
        B_base = B_ptr + b.to(gl.int64) * stride_B_b + g.to(gl.int64) * stride_B_g + start * stride_B_t
        C_base = C_ptr + b.to(gl.int64) * stride_C_b + g.to(gl.int64) * stride_C_g + start * stride_C_t
        y_off = b.to(gl.int64) * stride_y_b + h.to(gl.int64) * stride_y_h + start * stride_y_t + p0
        z_base = z_ptr + b.to(gl.int64) * stride_z_b + h.to(gl.int64) * stride_z_h + start * stride_z_t + p0
        if PIECES:  # the previous piece's last reads of the stages, H_sm and xw_sm are done before anyone writes them
            _barrier()
        # PDL: this launch may start while the preparation launch runs; nothing it wrote (`decays`) is read before
        # the wait: in the late form, after the first stage's x, B and C are on their way
        LATE_WAIT: gl.constexpr = PDL and not (EARLY or PIECES)
        if PDL and (EARLY or PIECES):
            _wait_prior_grid()
        if EARLY:  # the span's own state first: the hand-over below then needs no sweep after the wait
            if OWN_STAGES == 3:
                S, total = _own_state3(x_sm, B_sm, C_sm, xw_sm, dt_sm, cs_sm, H_sm.slice(0, SUB), x_base, B_base,
                                       decays, length, stride_x_t, stride_B_t, CHUNK, SUB, BLOCK_P, BLOCK_N)
            else:
                S, total = _own_state(x_sm, B_sm, dt_sm, cs_sm, xw_sm, x_base, B_base, decays, length, stride_x_t,
                                      stride_B_t, CHUNK, SUB, BLOCK_P, BLOCK_N)
        if TMA:  # (rows of the 2-D views: the span's first token's; columns: the head's block, the group's)
            hopper.mbarrier.init(bars.index(0), count=1)
            hopper.mbarrier.init(bars.index(1), count=1)
            hopper.fence_async_shared()
            _barrier()
            row = (b.to(gl.int64) * seqlen + start).to(gl.int32)
            x_col = h * (n_pblocks * BLOCK_P) + p0
            bc_col = g * BLOCK_N
            _tma_loads(x_desc, B_desc, C_desc, x_sm.index(0), B_sm.index(0), C_sm.index(0), dt_sm.index(0),
                       cs_sm.index(0), bars.index(0), row, x_col, bc_col, decays, 0, length, CHUNK, SUB, BLOCK_P,
                       BLOCK_N, LATE_WAIT)
        else:
            _issue_loads(x_sm.index(0), B_sm.index(0), C_sm.index(0), dt_sm.index(0), cs_sm.index(0), x_base, B_base,
                         C_base, decays, 0, length, stride_x_t, stride_B_t, stride_C_t, CHUNK, SUB, BLOCK_P, BLOCK_N,
                         True, LATE_WAIT)

        # the state entering the span, [BLOCK_N, BLOCK_P] (kept transposed: the update is an M = BLOCK_N product)
        n_r = gl.arange(0, BLOCK_N, layout=rows)
        p_c = gl.arange(0, BLOCK_P, layout=cols)
        slot = slot_ptr + chain.to(gl.int64) * (BLOCK_N * BLOCK_P) + n_r[:, None] * BLOCK_P + p_c[None, :]
        if k > 0:
            seen = gl.atomic_add(flag_ptr + chain, 0, sem="acquire")
            while seen != k:
                seen = gl.atomic_add(flag_ptr + chain, 0, sem="acquire")
            H = gl.load(slot, cache_modifier=".cg").to(gl.float32)  # through L2
        elif HAS_INIT:
            H = gl.load(init_ptr + seq.to(gl.int64) * stride_init_s + h * stride_init_h
                        + (p0 + p_c[None, :]) * stride_init_p + n_r[:, None] * stride_init_n).to(gl.float32)
        else:
            H = gl.zeros([BLOCK_N, BLOCK_P], gl.float32, acc)
        if EARLY:  # hand the next span its state at once: the chain between programs stays short
            _publish(H * gl.exp(total) + S, slot, final_ptr, stride_final_s, stride_final_h, stride_final_p,
                     stride_final_n, seq, h, p0, n_r, p_c, flag_ptr + chain, k, n_chunks, STORE_FINAL)
        if FP16:  # H_sm holds H / h_unit; the registers hold H / h_reg (each sub-chunk's w_unit, see below)
            h_reg = 1.0
            h_unit = _pow2_at_least(_abs_max(H))
            H_sm.store((H * (1.0 / h_unit)).to(dtype))
        else:
            H_sm.store(H.to(dtype))

        i_r = gl.arange(0, SUB, layout=rows)
        j_c = gl.arange(0, SUB, layout=cols)
        causal = i_r[:, None] >= j_c[None, :]
        zero = gl.zeros([SUB, BLOCK_P], gl.float32, acc)
        t_o = gl.arange(0, SUB, layout=gl.SliceLayout(1, out_l))
        p_o = gl.arange(0, BLOCK_P, layout=gl.SliceLayout(0, out_l))
        if HAS_D:
            if D_HEAD:
                D = gl.load(D_ptr + h * stride_D_h).to(gl.float32)
            else:
                D = gl.load(D_ptr + h * stride_D_h + (p0 + p_o) * stride_D_p).to(gl.float32)[None, :]
        n_sub = gl.cdiv(length, SUB)
        # the first sub-chunk's C.B^T; each iteration issues the next one's at its end
        async_copy.wait_group(0)
        if TMA:
            hopper.mbarrier.wait(bars.index(0), 0)
        _barrier()
        hopper.fence_async_shared()
        cb_next = hopper.warpgroup_mma(C_sm.index(0), B_sm.index(0).permute((1, 0)), zero, use_acc=False,
                                       is_async=True)
        for it in range(n_sub):
            s0 = it * SUB
            st = it % 2
            # every thread is done with the previous iteration: H_sm (written at its end) is whole, and nobody reads
            # its stage any more (its dt and cumsums, and D's x, were read from it after the last barrier)
            _barrier()
            # the next sub-chunk's rows into that stage; the last iteration loads its own rows again, which nothing
            # reads
            nxt = gl.minimum(s0 + SUB, (n_sub - 1) * SUB)
            if TMA:  # (the barrier above ordered every thread's reads of that stage before the copies' writes)
                hopper.fence_async_shared()
                _tma_loads(x_desc, B_desc, C_desc, x_sm.index(1 - st), B_sm.index(1 - st), C_sm.index(1 - st),
                           dt_sm.index(1 - st), cs_sm.index(1 - st), bars.index(1 - st), row, x_col, bc_col, decays,
                           nxt, length, CHUNK, SUB, BLOCK_P, BLOCK_N)
            else:
                _issue_loads(x_sm.index(1 - st), B_sm.index(1 - st), C_sm.index(1 - st), dt_sm.index(1 - st),
                             cs_sm.index(1 - st), x_base, B_base, C_base, decays, nxt, length, stride_x_t, stride_B_t,
                             stride_C_t, CHUNK, SUB, BLOCK_P, BLOCK_N)
            hopper.fence_async_shared()
            x_s = x_sm.index(st)
            B_s = B_sm.index(st)
            last = _last_cumsum(cs_sm, st, SUB)
            # H's decay before any product is issued: ptxas waits for every product in flight before one whose
            # accumulator registers were written after the previous products were issued
            # C.B^T, issued at the end of the previous iteration, is waited for before the next products are issued:
            # ptxas (Triton 3.6's and 3.9's) serialises every wgmma of the kernel when a wait leaves two groups in
            # flight here and the kernel has the early publish's own-state products too
            cb = hopper.warpgroup_mma_wait(num_outstanding=0, deps=[cb_next])
            if FP16:  # the update's w x over w_unit, and H, which it accumulates on, recounted in it
                dt_c = dt_sm.index(st).load(cols)
                cs_c = cs_sm.index(st).load(cols)
                w_unit = _pow2_at_least(gl.max(gl.abs(_ex2(gl.fma(cs_c, -LOG2E, last * LOG2E)) * dt_c), axis=0))
                H = H * (gl.exp(last) * (h_reg / w_unit))
                h_reg = w_unit
            else:
                H = H * gl.exp(last)
            y0 = hopper.warpgroup_mma(C_sm.index(st), H_sm, zero, use_acc=False, is_async=True)
            # the state entering the sub-chunk, at the start of each of the backward's chunks (spans start at multiples
            # of STATE_CHUNK), while C.H runs: at 1x32K the forward +4 % against +12 % at the iteration's top (H100;
            # after the wait for all products +13 %; benchmarks/notes/ssd_backward.md, thirty-fourth session)
            # (fp16: H_sm holds H over h_unit, a tile's unit of the scaled states, stored beside it)
            if STORE_STATES:
                if s0 % STATE_CHUNK == 0:
                    state_row = _entering_row(state_rows_ptr, rest, start, s0, batch, b, CHUNK, STATE_CHUNK,
                                              IS_VARLEN)
                    if TMA_STATES:  # H_sm as it is (its writes were fenced for the async proxy at the top)
                        _tma_store(states_desc, [(state_row * nheads + h).to(gl.int32) * BLOCK_N, p0], H_sm)
                    else:
                        _store_entering(H_sm, states_ptr, state_row, nheads, n_pblocks, h, p0, BLOCK_N, BLOCK_P)
                    if FP16:
                        gl.store(scale_ptr + (state_row * nheads + h) + n_r * 0, h_unit + n_r * 0.0, mask=n_r == 0)
            if not FP16:
                dt_c = dt_sm.index(st).load(cols)
                cs_c = cs_sm.index(st).load(cols)
            dt_r = dt_sm.index(st).load(rows)
            cs_r = cs_sm.index(st).load(rows)
            # the state update's operand w x, and the update (it needs only H and the loads)
            x_r = x_s.load(acc).to(gl.float32)
            w = _ex2(gl.fma(cs_r, -LOG2E, last * LOG2E)) * dt_r
            if FP16:
                w = w * (1.0 / w_unit)
            xw_sm.store((x_r * w[:, None]).to(dtype))
            hopper.fence_async_shared()
            _barrier()
            upd = hopper.warpgroup_mma(B_s.permute((1, 0)), xw_sm, H, is_async=True)

            # (cs_i log2 e - cs_j log2 e by one explicit fma, as in the Triton kernel: nothing left to the compiler)
            e_ij = gl.fma(gl.expand_dims(cs_r, 1), LOG2E, -gl.expand_dims(cs_c * LOG2E, 0))
            m = cb * _ex2(gl.where(causal, e_ij, -float("inf"))) * dt_c[None, :]
            if FP16:  # each row of m over its own unit (a reduction within a warp), and y's row with it
                m_unit = _pow2_at_least(gl.max(gl.abs(m), axis=1))
                m = m * (1.0 / m_unit)[:, None]
            # rounding m to 16 bits was the largest error of the Triton kernel's first version: two 16-bit parts
            m_hi = m.to(dtype)
            m_lo = (m - m_hi.to(gl.float32)).to(dtype)
            y0 = hopper.warpgroup_mma_wait(num_outstanding=1, deps=[y0])
            if FP16:
                y = y0 * (_ex2(cs_r * LOG2E) * (h_unit / m_unit))[:, None]
            else:
                y = y0 * _ex2(cs_r * LOG2E)[:, None]
            y = hopper.warpgroup_mma(gl.convert_layout(m_hi, op_a), x_s, y, is_async=True)
            y = hopper.warpgroup_mma(gl.convert_layout(m_lo, op_a), x_s, y, is_async=True)
            y, H = hopper.warpgroup_mma_wait(num_outstanding=0, deps=[y, upd])
            if FP16:
                y = y * m_unit[:, None]
            if MOVE_16:  # y, rounded, into w x's buffer (the update that read it is done), read back after the barrier
                if HAS_D:  # (x as loaded for w x: the same values, no second trip through shared memory)
                    y += x_r * D
                xw_sm.store(y.to(dtype))
            if H_ROWS:  # each row's largest |H| (within its warp) to shared memory, read whole after the barrier
                hmax_sm.store(gl.max(gl.abs(H), axis=1))
            # the next sub-chunk's C.B^T runs while this one's state and output are written
            async_copy.wait_group(0)
            if TMA:  # stage 1 - st's copies of this iteration: that barrier's use (it + 1) // 2 (stage 0's first use
                # was before the loop)
                hopper.mbarrier.wait(bars.index(1 - st), ((it + 1) // 2) & 1)
            if TMA_STATES:  # the state's store has read H_sm before anyone writes it below
                hopper.tma.store_wait(0)
            _barrier()
            hopper.fence_async_shared()
            cb_next = hopper.warpgroup_mma(C_sm.index(1 - st), B_sm.index(1 - st).permute((1, 0)), zero,
                                           use_acc=False, is_async=True)
            if FP16:
                if H_ROWS:
                    h_pow = _pow2_at_least(_h_rows_max(hmax_sm, BLOCK_N))
                else:
                    h_pow = _pow2_at_least(_abs_max(H))
                H_sm.store((H * (1.0 / h_pow)).to(dtype))
                h_unit = h_pow * h_reg
            else:
                H_sm.store(H.to(dtype))
            t = s0 + t_o
            mask_t = (t < length)[:, None]
            offs = t[:, None] * stride_y_t + p_o[None, :]
            if MOVE_16:  # (the next iteration writes w x there after its first barrier)
                gl.store(y_ptr + y_off + offs, xw_sm.load(out_l), mask=mask_t)
            else:
                y = gl.convert_layout(y, out_l)
                if HAS_D:
                    y += x_s.load(out_l).to(gl.float32) * D
                if STORE_YPRE:  # y before the gate, which the backward's dz needs
                    gl.store(ypre_ptr + y_off + offs, y.to(dtype), mask=mask_t)
                if HAS_Z:
                    zv = gl.load(z_base + t[:, None] * stride_z_t + p_o[None, :], mask=mask_t, other=0.0).to(gl.float32)
                    y = y * zv * (1.0 / (1.0 + gl.exp(-zv)))  # (tl.sigmoid's form: the Triton kernel's bits)
                gl.store(y_ptr + y_off + offs, y.to(dtype), mask=mask_t)
        async_copy.wait_group(0)
        hopper.warpgroup_mma_wait(num_outstanding=0, deps=[cb_next])
        if FP16:
            H = H * h_reg
        if EARLY:
            # the running state is not needed after the sweep here, and with it dead ptxas (Triton 3.6's) miscompiled
            # the loop: misaligned and illegal addresses on an H100 at headdim 128 / dstate 64, where the PTX was the
            # same but for this store (benchmarks/notes/ssd_forward.md, thirtieth session). A store no program takes
            # keeps it live after the loop, as the late publish does.
            if k < 0:
                gl.store(slot, H.to(slot_ptr.dtype.element_ty))
        else:
            _publish(H, slot, final_ptr, stride_final_s, stride_final_h, stride_final_p, stride_final_n, seq, h, p0,
                     n_r, p_c, flag_ptr + chain, k, n_chunks, STORE_FINAL)
        if PIECES and TMA:  # the next piece initialises them again (every copy on them was waited for)
            hopper.mbarrier.invalidate(bars.index(0))
            hopper.mbarrier.invalidate(bars.index(1))

    @gluon.jit
    def _ssd_fwd_gluon_kernel(
        x_ptr, B_ptr, C_ptr, D_ptr, z_ptr, init_ptr, y_ptr, ypre_ptr, final_ptr, decays_ptr, counter_ptr, flag_ptr,
        slot_ptr, states_ptr, table_ptr, state_rows_ptr, scale_ptr,
        batch, seqlen, nheads, heads_per_group, n_pblocks, n_programs,
        stride_x_b, stride_x_t, stride_x_h, stride_B_b, stride_B_t, stride_B_g, stride_C_b, stride_C_t, stride_C_g,
        stride_z_b, stride_z_t, stride_z_h, stride_y_b, stride_y_t, stride_y_h, stride_D_h, stride_D_p,
        stride_init_s, stride_init_h, stride_init_p, stride_init_n,
        stride_final_s, stride_final_h, stride_final_p, stride_final_n, span, x_desc, B_desc, C_desc, states_desc,
        CHUNK: gl.constexpr, SUB: gl.constexpr, BLOCK_P: gl.constexpr, BLOCK_N: gl.constexpr,
        HAS_D: gl.constexpr, HAS_Z: gl.constexpr, STORE_YPRE: gl.constexpr, HAS_INIT: gl.constexpr,
        STORE_FINAL: gl.constexpr, EARLY: gl.constexpr = False, D_HEAD: gl.constexpr = False,
        OWN3: gl.constexpr = True,  # False: the own-state sweep in two stages wherever (an A/B switch)
        SPAN_GIVEN: gl.constexpr = False, STORE_STATES: gl.constexpr = False, STATE_CHUNK: gl.constexpr = 64,
        IS_VARLEN: gl.constexpr = False, TMA: gl.constexpr = False, TMA_STATES: gl.constexpr = False,
        PIECES: gl.constexpr = 0, PDL: gl.constexpr = False, TAILS: gl.constexpr = 0,
    ):
        """A program: a span of one chain's tokens (sequence, head, headdim block of BLOCK_P). The span is CHUNK tokens,
        or with SPAN_GIVEN the run-time `span` (at most CHUNK, which then only lays out the rows of `decays`): one
        compiled kernel for spans of any number of chunks up to CHUNK (`forward.gluon_span`). STORE_STATES: the state
        entering every STATE_CHUNK tokens (the running state, as the sweep used it) into states_ptr, the backward's
        (chunk rows, nheads, BLOCK_N, headdim) layout (`_store_entering`); with fp16 inputs a scaled buffer
        (`forward.new_states`, headdim 64): H_sm's 16 bits as they are, over h_unit, which goes to scale_ptr.
        TMA (late publish, dense, every sub-chunk whole: `tma_descriptors`): the output sweep's x, B and C rows by the
        tensor memory accelerator through x_desc, B_desc, C_desc (2-D views (batch x seqlen, columns)), each stage's
        copies completing on its own mbarrier; else (and then the descriptors are 0) by cp.async.
        PIECES (late publish, dense; `span` the chunk's tokens, CHUNK the decays' rows, a whole sequence): a program
        is one of n_programs slots, which sweeps the pieces (a chain's tokens, whole or cut in two at a chunk
        boundary) of `forward.balanced_pieces`' plan one after another: every slot about the same number of chunks,
        no wave left part empty. The slot that takes
        ticket t is n_programs - 1 - t, so that a cut chain's second piece (its slot's last) waits on its first (the
        next slot's first piece), which a program with an earlier ticket sweeps before anything else.
        PDL: launched to start while the preparation launch still runs (`launch_pdl`); `_sweep_span` reads `decays`
        only after waiting for that launch's end.
        TAILS (early publish, dense, run-time span: `forward.one_wave_tails`): every chain's last span, the shorter
        one, is not a program of its own: the last programs (tickets after every other span's) each take TAILS
        chains' last spans one after another, in the late form (no own state: nothing waits on a last span), each
        waiting for the state its chain's previous span hands on early, as that span's own program would have. The
        other programs run in the spare slots' stead at spans a little shorter than even ones: one wave of equal
        programs with no slot left idle."""
        dtype: gl.constexpr = x_ptr.dtype.element_ty
        sl_p: gl.constexpr = gl.NVMMASharedLayout.get_default_for([SUB, BLOCK_P], dtype)
        sl_n: gl.constexpr = gl.NVMMASharedLayout.get_default_for([SUB, BLOCK_N], dtype)
        sl_h: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, BLOCK_P], dtype)
        FP16: gl.constexpr = dtype == gl.float16
        # the ticket: launch order, chunk-position-major (the program with the last one puts the counter back to 0)
        # (relaxed: a ticket carries no data, and an acquire here would invalidate the SM's L1 at every program's
        # start: `triton_common.take_ticket`)
        ticket = gl.atomic_add(counter_ptr, 1, sem="relaxed")
        if ticket == n_programs - 1:
            gl.atomic_xchg(counter_ptr, 0, sem="relaxed")
        x_sm = gl.allocate_shared_memory(dtype, [2, SUB, BLOCK_P], sl_p)
        B_sm = gl.allocate_shared_memory(dtype, [2, SUB, BLOCK_N], sl_n)
        C_sm = gl.allocate_shared_memory(dtype, [2, SUB, BLOCK_N], sl_n)
        xw_sm = gl.allocate_shared_memory(dtype, [SUB, BLOCK_P], sl_p)
        H_sm = gl.allocate_shared_memory(dtype, [BLOCK_N, BLOCK_P], sl_h)
        # dt and the dt A cumsums of each stage's sub-chunk (from global memory, their latency was a quarter of the
        # warps' stalls: ncu, 1x128K).
        # y moves to the stores' layout in 16 bits where nothing after the rounding needs its columns (no gate; D, if
        # any, one per head, added in the products' layout), by hand through xw_sm; else in fp32 by convert_layout (a
        # 64x64 fp32 tile takes its 8 KB of scratch in two rounds, each with its barriers: 5 % at 8x4K). The same
        # bits either way. Without that scratch (106 KB in all) there is room for a third stage of dt and the cumsums,
        # which the early form's own-state sweep takes (`_own_state3`); with it, 113 KB, H100's most for two programs
        # an SM (the compile test checks)
        MOVE_16: gl.constexpr = not HAS_Z and (D_HEAD or not HAS_D)
        OWN_STAGES: gl.constexpr = 3 if (MOVE_16 and OWN3) else 2
        dt_sm = gl.allocate_shared_memory(gl.float32, [OWN_STAGES, SUB], gl.SwizzledSharedLayout(1, 1, 1, [0]))
        cs_sm = gl.allocate_shared_memory(gl.float32, [OWN_STAGES, SUB], gl.SwizzledSharedLayout(1, 1, 1, [0]))
        # fp16: the rows' largest |H| through the loop's own barrier (`_h_rows_max`), where y moves in 16 bits (with
        # the fp32 move's scratch these 512 bytes would pass H100's most for two programs an SM: Gluon's own reduction
        # across the warps there, two more barriers a sub-chunk)
        H_ROWS: gl.constexpr = FP16 and MOVE_16
        if H_ROWS:
            hmax_sm = gl.allocate_shared_memory(gl.float32, [BLOCK_N], gl.SwizzledSharedLayout(1, 1, 1, [0]))
        else:
            hmax_sm = dt_sm  # (not read)
        if TMA:  # each stage's copies complete on its mbarrier (initialised by each span's sweep)
            bars = gl.allocate_shared_memory(gl.int64, [2, 1], hopper.mbarrier.MBarrierLayout())
        else:
            bars = dt_sm  # (not read)
        if PIECES:  # slot s's share of the chains' chunks laid end to end (`forward.balanced_pieces`: the same plan,
            # here from the ticket alone, so that everything derived from it stays in uniform registers); `span` is
            # the chunk's tokens
            s = n_programs - 1 - ticket
            chunks = gl.cdiv(seqlen, span)
            total = (batch * nheads * n_pblocks * chunks).to(gl.int64)
            lo = (total * s // n_programs).to(gl.int32)
            hi = (total * (s + 1) // n_programs).to(gl.int32)
            for chain in range(lo // chunks, gl.cdiv(hi, chunks)):
                n = gl.minimum(hi, chain * chunks + chunks) - gl.maximum(lo, chain * chunks)  # its chunks here
                cut = (n != chunks).to(gl.int32)
                k = cut * (lo <= chain * chunks).to(gl.int32)  # 1: its last chunks (slot s + 1 sweeps its first)
                n_chunks = 1 + cut
                start = (k * (chunks - n) * span).to(gl.int64)
                length = gl.minimum(seqlen - k * (chunks - n) * span, n * span)
                if PIECES == 2:  # the line's chains batch row first: chains that start together share B and C
                    b = chain % batch
                    pb = chain // batch % n_pblocks
                    h = chain // batch // n_pblocks
                else:
                    b, h, pb = _chain_place(chain, nheads, n_pblocks)
                decays = decays_ptr + (b.to(gl.int64) * nheads + h) * (2 * CHUNK) + start  # (rows: whole sequences)
                _sweep_span(
                    x_ptr, B_ptr, C_ptr, D_ptr, z_ptr, init_ptr, y_ptr, ypre_ptr, final_ptr, flag_ptr, slot_ptr,
                    states_ptr, state_rows_ptr, scale_ptr, batch, seqlen, nheads, n_pblocks, stride_x_b, stride_x_t,
                    stride_x_h, stride_B_b, stride_B_t, stride_B_g, stride_C_b, stride_C_t, stride_C_g, stride_z_b,
                    stride_z_t, stride_z_h, stride_y_b, stride_y_t, stride_y_h, stride_D_h, stride_D_p, stride_init_s,
                    stride_init_h, stride_init_p, stride_init_n, stride_final_s, stride_final_h, stride_final_p,
                    stride_final_n, x_desc, B_desc, C_desc, states_desc, x_sm, B_sm, C_sm, xw_sm, H_sm, dt_sm, cs_sm,
                    hmax_sm, bars, b, h, h // heads_per_group, b, k, start, length, n_chunks, chain, pb, b, decays,
                    CHUNK, SUB, BLOCK_P, BLOCK_N, HAS_D, HAS_Z, STORE_YPRE, HAS_INIT, STORE_FINAL, EARLY, D_HEAD,
                    STORE_STATES, STATE_CHUNK, IS_VARLEN, TMA, TMA_STATES, PIECES, MOVE_16, OWN_STAGES, H_ROWS, PDL)
        else:
            n_chains = batch * nheads * n_pblocks
            tail = -1
            if TAILS:
                tail = ticket - (n_programs - gl.cdiv(n_chains, TAILS))
            if tail >= 0:  # (TAILS) chains tail TAILS .. tail TAILS + TAILS - 1, each its last span
                n_chunks = gl.cdiv(seqlen, span)
                k = n_chunks - 1
                start = (k * span).to(gl.int64)
                length = seqlen - k * span
                for i in range(TAILS):
                    chain = tail * TAILS + i
                    if chain < n_chains:
                        b, h, pb = _chain_place(chain, nheads, n_pblocks)
                        rest = k * batch + b
                        decays = decays_ptr + (rest.to(gl.int64) * nheads + h) * (2 * CHUNK)
                        # (PIECES = 1: the barrier before a program's next span writes the buffers)
                        _sweep_span(
                            x_ptr, B_ptr, C_ptr, D_ptr, z_ptr, init_ptr, y_ptr, ypre_ptr, final_ptr, flag_ptr,
                            slot_ptr, states_ptr, state_rows_ptr, scale_ptr, batch, seqlen, nheads, n_pblocks,
                            stride_x_b, stride_x_t, stride_x_h, stride_B_b, stride_B_t, stride_B_g, stride_C_b,
                            stride_C_t, stride_C_g, stride_z_b, stride_z_t, stride_z_h, stride_y_b, stride_y_t,
                            stride_y_h, stride_D_h, stride_D_p, stride_init_s, stride_init_h, stride_init_p,
                            stride_init_n, stride_final_s, stride_final_h, stride_final_p, stride_final_n, x_desc,
                            B_desc, C_desc, states_desc, x_sm, B_sm, C_sm, xw_sm, H_sm, dt_sm, cs_sm, hmax_sm, bars,
                            b, h, h // heads_per_group, b, k, start, length, n_chunks, chain, pb, rest, decays, CHUNK,
                            SUB, BLOCK_P, BLOCK_N, HAS_D, HAS_Z, STORE_YPRE, HAS_INIT, STORE_FINAL, False, D_HEAD,
                            STORE_STATES, STATE_CHUNK, IS_VARLEN, TMA, TMA_STATES, 1, MOVE_16, OWN_STAGES, H_ROWS,
                            PDL)
            if tail < 0:
                pb = ticket % n_pblocks
                rest = ticket // n_pblocks
                h = rest % nheads
                rest = rest // nheads
                g = h // heads_per_group
                if IS_VARLEN:  # packed (batch 1): the span's row of the table (`forward.varlen_table`), its chain a
                    # lane; the row: sequence, span index k, first token, length, spans, lane
                    entry = table_ptr + rest.to(gl.int64) * 6
                    seq = gl.load(entry).to(gl.int32)
                    k = gl.load(entry + 1).to(gl.int32)
                    start = gl.load(entry + 2)
                    length = gl.load(entry + 3).to(gl.int32)
                    n_chunks = gl.load(entry + 4).to(gl.int32)
                    b = rest * 0
                    chain = (gl.load(entry + 5).to(gl.int32) * nheads + h) * n_pblocks + pb
                else:
                    b = rest % batch
                    k = rest // batch
                    seq = b
                    if SPAN_GIVEN:
                        start = (k * span).to(gl.int64)
                        length = gl.minimum(seqlen - k * span, span)
                        n_chunks = gl.cdiv(seqlen, span)
                    else:
                        start = (k * CHUNK).to(gl.int64)
                        length = gl.minimum(seqlen - k * CHUNK, CHUNK)
                        n_chunks = gl.cdiv(seqlen, CHUNK)
                    chain = (b * nheads + h) * n_pblocks + pb
                decays = decays_ptr + (rest.to(gl.int64) * nheads + h) * (2 * CHUNK)
                _sweep_span(
                    x_ptr, B_ptr, C_ptr, D_ptr, z_ptr, init_ptr, y_ptr, ypre_ptr, final_ptr, flag_ptr, slot_ptr,
                    states_ptr, state_rows_ptr, scale_ptr, batch, seqlen, nheads, n_pblocks, stride_x_b, stride_x_t,
                    stride_x_h, stride_B_b, stride_B_t, stride_B_g, stride_C_b, stride_C_t, stride_C_g, stride_z_b,
                    stride_z_t, stride_z_h, stride_y_b, stride_y_t, stride_y_h, stride_D_h, stride_D_p, stride_init_s,
                    stride_init_h, stride_init_p, stride_init_n, stride_final_s, stride_final_h, stride_final_p,
                    stride_final_n, x_desc, B_desc, C_desc, states_desc, x_sm, B_sm, C_sm, xw_sm, H_sm, dt_sm, cs_sm,
                    hmax_sm, bars, b, h, g, seq, k, start, length, n_chunks, chain, pb, rest, decays, CHUNK, SUB,
                    BLOCK_P, BLOCK_N, HAS_D, HAS_Z, STORE_YPRE, HAS_INIT, STORE_FINAL, EARLY, D_HEAD, STORE_STATES,
                    STATE_CHUNK, IS_VARLEN, TMA, TMA_STATES, PIECES, MOVE_16, OWN_STAGES, H_ROWS, PDL)

    # (the TMA form's descriptors: `launch` keys them by their specialisation and a replay rebuilds them)
    _runtime.descriptor_arguments(_ssd_fwd_gluon_kernel, "x_desc", "B_desc", "C_desc", "states_desc")

    @gluon.jit
    def _chain_place(chain, nheads, n_pblocks):
        """(batch row, head, headdim block) of a dense launch's chain (b nheads + h) n_pblocks + pb."""
        pb = chain % n_pblocks
        b = chain // n_pblocks // nheads
        h = chain // n_pblocks % nheads
        return b, h, pb

    @gluon.jit
    def _entering_row(state_rows_ptr, rest, start, s0, batch, b, CHUNK: gl.constexpr, STATE_CHUNK: gl.constexpr,
                      IS_VARLEN: gl.constexpr):
        """The backward's chunk row (position-major) of the chunk that starts s0 tokens into span row `rest`: packed,
        from the chunk table (`forward.varlen_state_rows`); else from the span's first token."""
        if IS_VARLEN:
            return gl.load(state_rows_ptr + rest.to(gl.int64) * (CHUNK // STATE_CHUNK) + s0 // STATE_CHUNK)
        else:
            return (start // STATE_CHUNK + s0 // STATE_CHUNK) * batch + b

    @gluon.jit
    def _store_entering(H_sm, states_ptr, row, nheads, n_pblocks, h, p0, BLOCK_N: gl.constexpr, BLOCK_P: gl.constexpr):
        """The state entering chunk row `row` (position-major), as the sweep holds it in H_sm (16 bits, whole: after a
        barrier), into the backward's states at (row, h, :, p0 : p0 + BLOCK_P), rows of n_pblocks x BLOCK_P: 16-byte
        stores, half of the state's rows at a time (few registers)."""
        HALF: gl.constexpr = BLOCK_N // 2
        ld: gl.constexpr = gl.BlockedLayout([1, 8], [32 * 8 // BLOCK_P, BLOCK_P // 8], [4, 1], [1, 0])
        n = gl.arange(0, HALF, layout=gl.SliceLayout(1, ld))
        p = gl.arange(0, BLOCK_P, layout=gl.SliceLayout(0, ld))
        width = n_pblocks * BLOCK_P
        base = states_ptr + (row * nheads + h) * (BLOCK_N * width) + p0
        for half in gl.static_range(2):
            v = H_sm.slice(half * HALF, HALF).load(ld)
            gl.store(base + (half * HALF + n)[:, None] * width + p[None, :], v.to(states_ptr.dtype.element_ty))

    @gluon.jit
    def _publish(H, slot, final_ptr, stride_final_s, stride_final_h, stride_final_p, stride_final_n, seq, h, p0, n_r,
                 p_c, flag, k, n_chunks, STORE_FINAL: gl.constexpr):
        """Hand the state after span k to span k + 1 (slot, then flag = k + 1), or store sequence seq's final state."""
        if k + 1 == n_chunks:
            if STORE_FINAL:
                final = (final_ptr + seq.to(gl.int64) * stride_final_s + h * stride_final_h
                         + (p0 + p_c[None, :]) * stride_final_p + n_r[:, None] * stride_final_n)
                gl.store(final, H.to(final_ptr.dtype.element_ty))
            if k > 0:
                gl.atomic_xchg(flag, 0, sem="relaxed")  # leave the flag clean for the next launch
        else:
            gl.store(slot, H.to(slot.dtype.element_ty))
            _barrier()  # every thread's part of the slot is written before the flag says so
            gl.atomic_xchg(flag, k + 1, sem="release")
