"""The fused ssd_scan forward kernel against the float64 references (interpreter on the CPU, GPU)."""

import dataclasses
import itertools
import math

import pytest
import torch

import flashssm
from flashssm.ops.ssd import kernel_available
from flashssm.ops.ssd import reference as ref
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd.forward import LaunchConfig, launch, pick_config
from tests.conftest import HAS_GPU
from tests.helpers import (SSD_OPTION_IDS, SSD_OPTION_NAMES, SSD_OPTIONS, SSD_OPTIONS_PAIRWISE, TOLERANCES,
                           VARLEN_IDS, VARLEN_PACKS, assert_close, assert_workspace_clean, rel_err, ssd_id, ssd_inputs,
                           to_float64)

# flashssm's fallback-to-reference warning is an error here: these tests must run the kernel
pytestmark = pytest.mark.filterwarnings("error:flashssm:RuntimeWarning")


def run_and_check(kw, dtype, *, chunk_size, cu_seqlens=None, state_dtype=None, what=""):
    """flashssm.ssd_scan (the kernel) against the sequential float64 reference on the same inputs."""
    assert kernel_available(kw["x"], kw["B"].shape[-1])
    y, h = flashssm.ssd_scan(**kw, chunk_size=chunk_size, cu_seqlens=cu_seqlens, return_final_states=True,
                             state_dtype=state_dtype)
    y_ref, h_ref = ref.ssd_scan_sequential(**to_float64(kw), cu_seqlens=cu_seqlens)
    assert y.dtype == kw["x"].dtype and h.dtype == (state_dtype or torch.float32)
    assert_close(y, y_ref, dtype, f"y {what}")
    assert_close(h, h_ref, state_dtype or dtype, f"final_states {what}")
    return y, h


# Interpreter runs are slow: the CPU grid is small; the GPU adds real shapes under -m gpu.
GRID = [
    (batch, seqlen, 4, headdim, dstate, ngroups)
    for seqlen, batch in ((1, 2), (63, 2), (257, 1))
    for headdim, dstate in ((32, 16), (64, 128))
    for ngroups in (1, 2, 4)
]


@pytest.mark.parametrize("shape", GRID, ids=[ssd_id(*s) for s in GRID])
def test_kernel_matches_reference(shape, device):
    kw = ssd_inputs(*shape, dtype=torch.float32, device=device, D="hp", z=True, dt_bias=True, dt_softplus=True,
                    initial_states=True)
    kw["dt_limit"] = (1e-3, 0.5)
    run_and_check(kw, torch.float32, chunk_size=64, what=ssd_id(*shape))


@pytest.mark.parametrize(SSD_OPTION_NAMES, SSD_OPTIONS, ids=SSD_OPTION_IDS)
def test_every_option(D, z, dt_bias, dt_softplus, dt_limit, initial_states, device):
    kw = ssd_inputs(2, 45, 4, 32, 16, 2, dtype=torch.float32, device=device, D=D, z=z, dt_bias=dt_bias,
                    dt_softplus=dt_softplus, initial_states=initial_states)
    if dt_limit:
        kw["dt_limit"] = (0.02, 0.08)
    y, _ = run_and_check(kw, torch.float32, chunk_size=16)
    # without final states: the same y (on the CPU over every pair of options' values, half this test's time over all)
    if HAS_GPU or (D, z, dt_bias, dt_softplus, dt_limit, initial_states) in SSD_OPTIONS_PAIRWISE:
        assert torch.equal(flashssm.ssd_scan(**kw, chunk_size=16), y)


@pytest.mark.parametrize("chunk_size", [16, 32, 64, 128, 256])
def test_chunk_sizes(chunk_size, device):
    kw = ssd_inputs(1, 300, 4, 32, 16, 1, dtype=torch.float32, device=device, D="h", initial_states=True)
    run_and_check(kw, torch.float32, chunk_size=chunk_size)


@pytest.mark.parametrize("initial_states", [False, True], ids=["zero-init", "init"])
@pytest.mark.parametrize("lengths", VARLEN_PACKS, ids=VARLEN_IDS)
def test_varlen(lengths, initial_states, device):
    kw = ssd_inputs(1, sum(lengths), 4, 32, 16, 2, dtype=torch.float32, device=device, D="h", z=True,
                    dt_bias=True, dt_softplus=True, initial_states=initial_states, num_seqs=len(lengths))
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), dtype=torch.int32, device=device)
    y, h = run_and_check(kw, torch.float32, chunk_size=32, cu_seqlens=cu)
    # each sequence on its own gives the same output and final state
    for s, (start, end) in enumerate(zip(cu.tolist(), cu.tolist()[1:])):
        alone = {k: (v[:, start:end] if k in ("x", "dt", "B", "C", "z") else v) for k, v in kw.items()}
        if initial_states:
            alone["initial_states"] = kw["initial_states"][s:s + 1]
        y1, h1 = flashssm.ssd_scan(**alone, chunk_size=32, return_final_states=True)
        torch.testing.assert_close(y[:, start:end], y1, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h[s:s + 1], h1, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("state_dtype", [torch.float16, torch.bfloat16])
def test_state_dtype(state_dtype, device):
    kw = ssd_inputs(2, 200, 4, 32, 16, 2, dtype=torch.float32, device=device, D="h", initial_states=True)
    y, h = run_and_check(kw, torch.float32 if state_dtype == torch.float16 else torch.bfloat16, chunk_size=32,
                         state_dtype=state_dtype)
    if state_dtype == torch.bfloat16 and not HAS_GPU:
        return  # the interpreter truncates fp32 to bf16 where GPUs (and torch) round to nearest
    # the reference rounds at the same hand-overs: the kernel sits far closer to it than the
    # rounding moves either away from the unrounded result
    y_chk, h_chk = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=32, state_dtype=state_dtype)
    y_exact, _ = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=32)
    assert rel_err(y, y_chk) < 0.5 * rel_err(y_chk, y_exact)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs(dtype, device):
    if dtype == torch.bfloat16 and not HAS_GPU:
        pytest.skip("the Triton interpreter's bf16 dot products are wrong; bf16 runs on the GPU")
    kw = ssd_inputs(2, 150, 4, 64, 32, 2, dtype=dtype, device=device, D="h", z=True, dt_softplus=True,
                    initial_states=True)
    run_and_check(kw, dtype, chunk_size=64)


def test_strided_inputs(device):
    """Views as a Mamba-2 layer makes them (slices of one projection) give the same result as copies."""
    b, l, h, p, n = 2, 70, 4, 32, 16
    proj = torch.randn(b, l, 2 * h * p + 2 * n + h + 3, device=device)
    x = proj[..., :h * p].view(b, l, h, p)
    z = proj[..., h * p:2 * h * p].view(b, l, h, p)
    B = proj[..., 2 * h * p:2 * h * p + n].view(b, l, 1, n)
    C = proj[..., 2 * h * p + n:2 * h * p + 2 * n].view(b, l, 1, n)
    dt = proj[..., 2 * h * p + 2 * n:2 * h * p + 2 * n + h]
    A = -torch.rand(h, device=device) - 0.5
    y = flashssm.ssd_scan(x, dt, A, B, C, z=z, dt_softplus=True, chunk_size=32)
    y_copy = flashssm.ssd_scan(*(t.contiguous() for t in (x, dt, A, B, C)), z=z.contiguous(), dt_softplus=True,
                               chunk_size=32)
    torch.testing.assert_close(y, y_copy, rtol=0, atol=0)


def test_deterministic(device):
    kw = ssd_inputs(2, 130, 4, 32, 16, 2, dtype=torch.float32, device=device, D="h", z=True, initial_states=True)
    y1, h1 = flashssm.ssd_scan(**kw, chunk_size=32, return_final_states=True)
    y2, h2 = flashssm.ssd_scan(**kw, chunk_size=32, return_final_states=True)
    assert torch.equal(y1, y2) and torch.equal(h1, h2)


def test_workspace_left_clean(device):
    """Counters and flags are back at zero after every launch, so no launch needs a memset."""
    lengths = [40, 1, 90]
    kw = ssd_inputs(1, sum(lengths), 4, 32, 16, 1, dtype=torch.float32, device=device, num_seqs=3)
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device=device)
    flashssm.ssd_scan(**kw, chunk_size=32, cu_seqlens=cu)
    flashssm.ssd_scan(**ssd_inputs(3, 100, 4, 32, 16, 2, dtype=torch.float32, device=device), chunk_size=16)
    assert_workspace_clean()


def test_nan_propagates_and_stays_local(device):
    """A NaN in x[b, t, h, p] reaches y[b, t:, h, p] through the state row p; in the matrix form it
    also reaches the earlier outputs of its chunk (a masked zero times NaN), as in the reference.
    An inf in dt[b, t, h] makes that head non-finite from t on. Nothing else is touched; nothing hangs."""
    kw = ssd_inputs(2, 100, 4, 32, 16, 2, dtype=torch.float32, device=device)
    kw["x"][0, 40, 1, 3] = math.nan
    kw["dt"][1, 70, 2] = math.inf
    y = flashssm.ssd_scan(**kw, chunk_size=32)
    bad = ~torch.isfinite(y)
    expected = torch.zeros_like(bad[0])
    expected[32:, 1, 3] = True  # from the start of the chunk holding token 40
    assert torch.equal(bad[0], expected)
    y_ref, _ = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=32)
    assert torch.equal(bad[0], ~torch.isfinite(y_ref[0]))
    assert bad[1, 70, 2].all() and not bad[1, :64].any() and not bad[1, :, [0, 1, 3]].any()
    finite = ~bad
    torch.testing.assert_close(y[finite], y_ref[finite].float(), rtol=1e-4, atol=1e-4)


# Real shapes, on the GPU only (pytest -m gpu).

GPU_SHAPES = [  # (batch, seqlen, nheads, headdim, dstate, ngroups, chunk)
    (1, 4096, 80, 64, 128, 1, 256),
    (2, 1000, 16, 128, 64, 2, 128),
    (3, 777, 24, 32, 256, 24, 64),
    (1, 3000, 8, 96, 48, 4, 256),
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=[f"{ssd_id(*s[:6])}-Q{s[6]}" for s in GPU_SHAPES])
def test_gpu_real_shapes(shape, dtype):
    *dims, chunk = shape
    kw = ssd_inputs(*dims, dtype=dtype, device="cuda", D="hp", z=True, dt_bias=True, dt_softplus=True,
                    initial_states=True)
    y, h = flashssm.ssd_scan(**kw, chunk_size=chunk, return_final_states=True)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=chunk)
    assert_close(y, y_ref, dtype, "y")
    assert_close(h, h_ref, dtype, "final_states")


@pytest.mark.gpu
@pytest.mark.parametrize("state_dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_gpu_varlen_real(state_dtype):
    lengths = [1, 4000, 0, 333, 256, 257, 1]
    kw = ssd_inputs(1, sum(lengths), 80, 64, 128, 1, dtype=torch.bfloat16, device="cuda", D="h",
                    dt_softplus=True, initial_states=True, num_seqs=len(lengths))
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device="cuda")
    y, h = flashssm.ssd_scan(**kw, chunk_size=256, cu_seqlens=cu, return_final_states=True, state_dtype=state_dtype)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=256, cu_seqlens=cu)
    assert_close(y, y_ref, torch.bfloat16, "y")
    assert rel_err(h, h_ref) < max(TOLERANCES[torch.bfloat16], TOLERANCES[state_dtype])


@pytest.mark.parametrize("sub_a", [None, 16], ids=["", "own-step-16"])
@pytest.mark.parametrize("group", [1, 3], ids=["chunk", "3-chunks"])
@pytest.mark.parametrize("early_publish", [True, False], ids=["early", "late"])
@pytest.mark.parametrize("varlen", [False, True], ids=["batch", "varlen"])
def test_both_publish_modes(early_publish, varlen, group, sub_a, device):
    """The state may be handed on before the output sweep (few chains) or after it (many); a program
    may sweep several chunks as one (group), the last span of a sequence shorter than the others; the
    early publish's own-state sweep may take steps of another size than the output sweep (sub_a)."""
    lengths = [70, 1, 0, 129] if varlen else None
    num_seqs = len(lengths) if varlen else 2
    kw = ssd_inputs(1 if varlen else 2, sum(lengths) if varlen else 150, 4, 32, 16, 2, dtype=torch.float32,
                    device=device, D="h", z=True, dt_softplus=True, initial_states=True, num_seqs=num_seqs)
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device=device) if varlen else None
    dims = check_ssd_scan(**kw, chunk_size=32, cu_seqlens=cu)
    base = pick_config(dims, torch.float32, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, early_publish, group=group,
                       sub_a=sub_a)
    assert sub_a is None or sub_a != base.sub  # the two sweeps' steps differ
    y, h, _, _ = launch(dims, **kw, return_final_states=True, config=cfg)
    y_ref, h_ref = ref.ssd_scan_sequential(**to_float64(kw), cu_seqlens=cu)
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(h, h_ref, torch.float32, "final_states")


@pytest.mark.parametrize("sub_a,pre_decays", [(None, False), (16, False), (128, False), (None, True), (128, True)],
                         ids=["", "step-16", "step-128", "prep", "step-128-prep"])
@pytest.mark.parametrize("late", [False, True], ids=["early", "late"])
def test_entering_states(late, sub_a, pre_decays, device):
    """The backward's state recompute (the forward without its output sweep): the state entering every chunk
    equals the float64 reference's final state of the sequence cut at that chunk's start, early publish (a
    program a chunk) and late (spans of chunks, states stored on the way), whatever the sweep's step (128:
    clamped to the chunk), with dt and its cumsums from the preparation launch or not."""
    from flashssm.ops.ssd.forward import entering_states

    batch, seqlen, chunk = 2, 150, 32
    kw = ssd_inputs(batch, seqlen, 3, 32, 16, 1, dtype=torch.float32, device=device, dt_bias=True,
                    dt_softplus=True, initial_states=True)
    dims = check_ssd_scan(kw["x"], kw["dt"], kw["A"], kw["B"], kw["C"], chunk_size=chunk)
    states = entering_states(dims, kw["x"], kw["dt"], kw["A"], kw["B"], dt_bias=kw["dt_bias"], dt_softplus=True,
                             initial_states=kw["initial_states"], late_states=late, group=3 if late else None,
                             sub_a=sub_a, pre_decays=pre_decays)
    n_chunks = math.ceil(seqlen / chunk)
    assert states.shape[0] == n_chunks * batch
    k64 = to_float64(kw)
    for k in range(n_chunks):
        if k == 0:
            want = k64["initial_states"]
        else:
            cut = {n: (v[:, :k * chunk] if n in ("x", "dt", "B", "C") else v) for n, v in k64.items()}
            _, want = ref.ssd_scan_sequential(**cut)
        got = states[k * batch:(k + 1) * batch, :, :16, :32].transpose(-1, -2)  # rows position-major, [N, P]
        assert_close(got, want, torch.float32, f"state entering chunk {k}")


SWEEP_STATES_CASES = [  # batch, seqlen, chunk, state chunk, early publish, chunks a program, sub-chunk, state dtype
    (2, 150, 64, 32, False, 2, 32, None),        # late spans of 128 tokens, states every 32, a ragged end
    (1, 200, 64, 64, True, 2, 64, torch.float16),  # early spans (the own state first), fp16 hand-overs
    (3, 64, 16, 16, True, 1, 16, None),          # a program a chunk, the sequence a whole number of chunks
]


@pytest.mark.parametrize("case", SWEEP_STATES_CASES, ids=["late-spans", "early-spans", "a-chunk-a-program"])
def test_sweep_states(case, device):
    """A forward launch with `states` and `state_chunk` stores, as its output sweep runs, the state entering every
    chunk of state_chunk tokens: the rows the recompute (`entering_states` at those chunks) gives, each of them written
    (the buffer starts as NaN), late and early publish, spans of several chunks, initial states and dt options, and y
    unchanged. Calls it cannot serve say so."""
    from flashssm.ops.ssd.forward import entering_states, states_shape, sweep_states

    batch, seqlen, chunk, state_chunk, early, group, sub, state_dtype = case
    kw = ssd_inputs(batch, seqlen, 4, 32, 16, 2, dtype=torch.float32, device=device, D="h", dt_bias=True,
                    dt_softplus=True, initial_states=True)
    dims = check_ssd_scan(**kw, chunk_size=chunk)
    cfg = dataclasses.replace(pick_config(dims, torch.float32, kw["x"].device), early_publish=early, group=group,
                              sub=sub, gluon_group=None)
    sdims = dataclasses.replace(dims, chunk_size=state_chunk)
    states = torch.full(states_shape(sdims), float("nan"), device=device)
    y, h, _, _ = launch(dims, **kw, return_final_states=True, config=cfg, state_dtype=state_dtype, states=states,
                        state_chunk=state_chunk)
    want = entering_states(sdims, kw["x"], kw["dt"], kw["A"], kw["B"], dt_bias=kw["dt_bias"], dt_softplus=True,
                           initial_states=kw["initial_states"], state_dtype=state_dtype)
    assert states.shape[0] == math.ceil(seqlen / state_chunk) * batch
    assert not states.isnan().any(), "a state not stored"
    # (fp32: the same math summed in another order; fp16 hand-overs: rounded at other tokens)
    assert rel_err(states, want) < (TOLERANCES[state_dtype] if state_dtype else 1e-5), "stored states"
    y_plain, h_plain, _, _ = launch(dims, **kw, return_final_states=True, config=cfg, state_dtype=state_dtype)
    assert torch.equal(y, y_plain) and torch.equal(h, h_plain), "storing the states changed the outputs"
    assert not sweep_states(dims, dataclasses.replace(cfg, sub=chunk), kw["x"], kw["B"], kw["C"], None, chunk // 2)
    with pytest.raises(ValueError, match="cannot store"):
        launch(dims, **kw, config=cfg, states=states, state_chunk=chunk * 2)
    for bad in (dict(state_chunk=state_chunk), dict(states=states, state_chunk=0)):  # (no buffer; no chunk)
        with pytest.raises(ValueError, match="state_chunk"):
            launch(dims, **kw, config=cfg, **bad)


def _check_swept_states(dims, kw, cfg, state_chunk, store_dtype, recompute, tolerance, gluon=False, scaled=False):
    """A forward launch of `cfg` storing the state entering every chunk of state_chunk tokens as its sweep runs
    (`launch(states=, state_chunk=)`; `gluon`: checked to run on the Gluon kernel): every row written (the buffer
    starts as NaN), within `tolerance` of the recompute's (`entering_states(**recompute)` at those chunks, in
    store_dtype; `scaled`: both fp16 over a unit a tile, compared as values), and y and the final states the same
    bits as without storing."""
    from flashssm.ops.ssd.forward import entering_states, new_states, states_shape, sweep_states, unscaled_states

    assert sweep_states(dims, cfg, kw["x"], kw["B"], kw["C"], None, state_chunk)
    sdims = dataclasses.replace(dims, chunk_size=state_chunk)
    shape = states_shape(sdims)
    states = new_states(shape, store_dtype, kw["x"].device, scaled).fill_(float("nan"))
    y, h, _, compiled = launch(dims, **kw, return_final_states=True, config=cfg, states=states,
                               state_chunk=state_chunk)
    if gluon:
        assert _on_gluon(compiled)
    assert not states.isnan().any(), "a state (or a scaled tile's unit) not stored"
    want = entering_states(sdims, kw["x"], kw["dt"], kw["A"], kw["B"], store_dtype=store_dtype, scaled=scaled,
                           **recompute)
    assert rel_err(unscaled_states(states, shape), unscaled_states(want, shape)) < tolerance, "stored states"
    y_plain, h_plain, _, _ = launch(dims, **kw, return_final_states=True, config=cfg)
    assert torch.equal(y, y_plain) and torch.equal(h, h_plain), "storing the states changed the outputs"


@pytest.mark.parametrize("form", ["recompute-late", "recompute-late-carry", "sweep-late", "sweep-early"])
def test_packed_states_in_spans(form, device):
    """Packed sequences, the Triton kernel sweeping spans of 3 chunks: the states-only recompute publishing late (and
    with `carry`: dotted with the gradient rows already in the buffer), and an output sweep storing the state
    entering every half chunk (late and early publish), each at its row of the chunk table (`varlen_state_rows`):
    the same rows as the early recompute's (a program a chunk), every one written (an empty sequence's chunk too:
    its initial state), y and the final states unchanged. Ragged ends, a one-token sequence, initial states."""
    from flashssm.ops.ssd.forward import entering_states, states_shape

    lengths = [150, 0, 1, 64, 37, 97]
    kw = ssd_inputs(1, sum(lengths), 3, 32, 16, 1, dtype=torch.float32, device=device, D="h", dt_bias=True,
                    dt_softplus=True, initial_states=True, num_seqs=len(lengths))
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), dtype=torch.int32, device=device)
    chunk = 32
    dims = check_ssd_scan(**kw, chunk_size=chunk, cu_seqlens=cu)
    common = dict(dt_bias=kw["dt_bias"], dt_softplus=True, initial_states=kw["initial_states"])
    if form.startswith("recompute"):
        want = entering_states(dims, kw["x"], kw["dt"], kw["A"], kw["B"], late_states=False, **common)
        out = torch.full(states_shape(dims), float("nan"), device=device)
        carry = None
        if form.endswith("carry"):
            dH = torch.randn(states_shape(dims), device=device)
            out.copy_(dH)
            carry = torch.full(states_shape(dims)[:2], float("nan"), device=device)
        got = entering_states(dims, kw["x"], kw["dt"], kw["A"], kw["B"], late_states=True, group=3, out=out,
                              carry=carry, **common)
        assert not got.isnan().any(), "a state not stored"
        assert rel_err(got, want) < 1e-5, "late states"
        if carry is not None:
            assert rel_err(carry, (dH * want).sum((2, 3))) < 1e-5, "carry"
        return
    early = form == "sweep-early"
    cfg = dataclasses.replace(pick_config(dims, torch.float32, kw["x"].device), early_publish=early,
                              group=1 if early else 3, sub=16, gluon_group=None, gluon=False)
    _check_swept_states(dims, kw, cfg, chunk // 2, torch.float32, dict(late_states=False, **common), 1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("prefetch", [False, True], ids=["", "prefetch"])
@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("early_publish", [True, False], ids=["early", "late"])
@pytest.mark.parametrize("sub", [16, 32, 64])
@pytest.mark.parametrize("block_p,num_warps,num_stages", [(64, 4, 2), (32, 4, 3), (64, 8, 2)])
def test_gpu_every_launch_config(sub, block_p, num_warps, num_stages, early_publish, group, prefetch, sub_a=None,
                                 pre_decays=False):
    """Any configuration a tuning table may pick computes the same thing (compilers miscompile some)."""
    kw = ssd_inputs(2, 700, 8, 64, 128, 1, dtype=torch.bfloat16, device="cuda", D="h", z=True, dt_softplus=True,
                    initial_states=True)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=256)
    dims = check_ssd_scan(**kw, chunk_size=256)
    cfg = LaunchConfig(sub, block_p, num_warps, num_stages, early_publish, group=group, prefetch=prefetch,
                       sub_a=sub_a, pre_decays=pre_decays, gluon=False)  # (the Triton kernel's configurations)
    y, h, _, _ = launch(dims, **kw, return_final_states=True, config=cfg)
    assert_close(y, y_ref, torch.bfloat16, f"y {cfg}")
    assert_close(h, h_ref, torch.bfloat16, f"final_states {cfg}")


@pytest.mark.gpu
@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("sub", [32, 64])
@pytest.mark.parametrize("sub_a", [128, 256])
def test_gpu_own_state_steps(sub_a, sub, group):
    """The early publish's own-state sweep with its own, larger step (one product of sub_a tokens a step)."""
    test_gpu_every_launch_config(sub, 64, 4, 2, True, group, False, sub_a=sub_a)


@pytest.mark.gpu
@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("early_publish", [True, False], ids=["early", "late"])
@pytest.mark.parametrize("sub", [16, 32, 64])
def test_gpu_pre_decays(sub, early_publish, group):
    """The sweeps with dt and its cumsums from the preparation launch, at every sub-chunk a table may pick."""
    test_gpu_every_launch_config(sub, 64, 4, 2, early_publish, group, not early_publish, pre_decays=True)


@pytest.mark.parametrize("early_publish", [True, False], ids=["early", "late"])
@pytest.mark.parametrize("varlen", [False, True], ids=["batch", "varlen"])
def test_pre_decays(early_publish, varlen, device):
    """dt (bias, softplus, limits) and its in-sub-chunk cumsums written by the preparation launch and loaded by the
    sweeps: the same result as computing them in the sweeps, spans of several chunks, packed sequences of odd, 1 and
    0 tokens (no sub-chunk mixes two sequences), tails shorter than a sub-chunk."""
    lengths = [70, 1, 0, 129] if varlen else None
    kw = ssd_inputs(1 if varlen else 2, sum(lengths) if varlen else 150, 4, 32, 16, 2, dtype=torch.float32,
                    device=device, D="h", z=True, dt_bias=True, dt_softplus=True, initial_states=True,
                    num_seqs=len(lengths) if varlen else 2)
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device=device) if varlen else None
    dims = check_ssd_scan(**kw, chunk_size=32, cu_seqlens=cu, dt_limit=(0.01, 5.0))
    base = pick_config(dims, torch.float32, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, early_publish, group=3,
                       pre_decays=True)
    assert base.sub < 32 * 3  # several sub-chunks a span
    y, h, _, _ = launch(dims, **kw, return_final_states=True, config=cfg)
    y_ref, h_ref = ref.ssd_scan_sequential(**to_float64(kw), cu_seqlens=cu, dt_limit=(0.01, 5.0))
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(h, h_ref, torch.float32, "final_states")


@pytest.mark.parametrize("pre_decays", [False, True], ids=["in-sweep", "prep"])
@pytest.mark.parametrize("early_publish", [True, False], ids=["early", "late"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_small_dt_and_underflowing_decays(dtype, early_publish, pre_decays, device):
    """16-bit inputs with dt near 0 (state-update weights that would be 16-bit subnormals unscaled) and dt * A far
    below -80 (decays that underflow), against the float64 reference, each head on its own scale (the small-dt
    heads' outputs and states are ~1e-4 of the others')."""
    if dtype == torch.bfloat16 and device == "cpu":
        pytest.skip("bf16 products are tested on the GPU (the interpreter's bf16 dot is wrong)")
    kw = ssd_inputs(1, 300, 4, 32, 16, 1, dtype=dtype, device=device)
    dt = kw["dt"].clone()
    dt[..., :2] = 1e-6
    dt[:, 100:140, 2] = 40.0
    kw["dt"] = dt
    dims = check_ssd_scan(**kw, chunk_size=64)
    base = pick_config(dims, dtype, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, early_publish, group=2,
                       pre_decays=pre_decays)
    y, h, _, _ = launch(dims, **kw, return_final_states=True, config=cfg)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=64)
    for head in range(4):
        assert_close(y[:, :, head], y_ref[:, :, head], dtype, f"y, head {head}")
        assert_close(h[:, head], h_ref[:, head], dtype, f"final_states, head {head}")


@pytest.mark.parametrize("early_publish", [False, True], ids=["late", "early"])
def test_fp16_with_dt_near_0_keeps_its_digits(early_publish, device):
    """fp16 inputs with every dt near 0 (softplus(-14), ~1e-6): H ~ dt x B and the intra-chunk matrix m ~ dt C.B^T
    are fp16 subnormals, so the products take them scaled by their largest values. y's error against float64 is
    then within twice the cost of rounding the float64 result to fp16 (it was 6x: 3.2e-3 against 5.0e-4, before the
    scaling), as at ordinary dt."""
    kw = ssd_inputs(2, 106, 2, 24, 32, 2, dtype=torch.float16, device=device, dt_bias=True, dt_softplus=True)
    kw["dt"] = torch.full_like(kw["dt"], -14.0) + 0.5 * torch.rand_like(kw["dt"])
    dims = check_ssd_scan(**kw, chunk_size=64)
    base = pick_config(dims, torch.float16, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, early_publish, group=1)
    y, _, _, _ = launch(dims, **kw, config=cfg)
    y_ref, _ = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=64)
    floor = rel_err(y_ref.half(), y_ref)
    assert 0 < floor and rel_err(y, y_ref) <= 2 * floor, (rel_err(y, y_ref), floor)


def _with_a_negative_dt(kw: dict, tokens: list[int]) -> dict:
    """kw with dt ~ 1e-6 but -1 at `tokens` (every sequence and head), no dt_bias or softplus, and slow decays (A in
    (-0.01, 0)): those tokens' weights w ~ -1 stand ~1e6 times the others' in magnitude (run it with a dt_limit below
    0, which lets dt keep its sign)."""
    for name in ("dt_bias", "dt_softplus"):
        kw.pop(name, None)
    kw["dt"] = torch.rand_like(kw["dt"]) * 1e-6 + 1e-6
    kw["dt"][:, tokens] = -1.0
    kw["A"] = -torch.rand_like(kw["A"]) * 0.01
    return kw


@pytest.mark.parametrize("early_publish", [False, True], ids=["late", "early"])
def test_fp16_with_a_negative_dt_keeps_its_range(early_publish, device):
    """fp16 inputs with dt_limit below 0 (allowed: dt then keeps its sign): one token's dt of -1 among dt ~ 1e-6, at a
    sub-chunk's start with slow decays, so its weight w = e^(...) dt is ~-1 where the others' are ~1e-6. The update's
    w x goes into fp16 over its largest |w|; over the largest w (a positive 1e-6) it was ~1e6 x x and rounded to inf:
    y NaN and the final states inf before. y within twice the cost of rounding float64 to fp16, and the states close."""
    kw = _with_a_negative_dt(ssd_inputs(1, 130, 2, 32, 16, 1, dtype=torch.float16, device=device), [64])
    limit = (-math.inf, math.inf)
    dims = check_ssd_scan(**kw, chunk_size=64, dt_limit=limit)
    base = pick_config(dims, torch.float16, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, early_publish, group=1)
    y, h, _, _ = launch(dims, **kw, return_final_states=True, config=cfg)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=64, dt_limit=limit)
    floor = rel_err(y_ref.half(), y_ref)
    assert 0 < floor and rel_err(y, y_ref) <= 2 * floor, (rel_err(y, y_ref), floor)
    assert rel_err(h, h_ref) <= 1e-3, rel_err(h, h_ref)


_COMPILE_FOR_HOPPER = """
import sys
sys.path.insert(0, sys.argv[1])
from benchmarks.offline_ssd_forward import compile_forward
for late, z in ((True, True), (False, False)):
    k = compile_forward(64, 64, 4, 2, late, z, True, prefetch=True)
    assert "prefetch.global.L2" in k.asm["ptx"], "no prefetch in the PTX"
    # the ticket and the flag resets relaxed: an acq_rel atomic invalidates the SM's L1 (triton_common.take_ticket)
    assert "acq_rel" not in k.asm["ptx"], "an acq_rel atomic"
    assert len(k.asm["cubin"]) > 0
print("compiled")
"""


def test_prefetch_path_compiles_for_hopper():
    """The forward's L2 prefetch (inline PTX, GPU only: the interpreter never runs it) compiled for
    sm_90 without a GPU, down to a cubin, late and early publish, with and without z; its atomics relaxed or
    acquire/release, never acq_rel (the default: a fence and an L1 invalidation at each program's ticket)."""
    import os
    import subprocess
    import sys

    if HAS_GPU:
        pytest.skip("the GPU tests compile and run it")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", _COMPILE_FOR_HOPPER, root], env=env, capture_output=True, text=True,
                         timeout=600)
    if run.returncode and ("ptxas" in run.stderr.lower() or "ImportError" in run.stderr):
        pytest.skip(f"no offline compile here: {run.stderr.strip().splitlines()[-1]}")
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.mark.parametrize("group", [0, -2, 1.5])
def test_launch_config_rejects_bad_group(group):
    with pytest.raises(ValueError, match="group"):
        LaunchConfig(64, 64, 4, 2, group=group)
    with pytest.raises(ValueError, match="gluon_group"):
        LaunchConfig(64, 64, 4, 2, gluon_group=group)


def test_span_rule_cached_and_switched(monkeypatch):
    """pick_config's spans (chunks a program) for an H100's 264 resident programs, 2.7B shape: four waves of programs
    at least, at most 8192 tokens with few chains (early publish), 2048 with many (late); cached, yet following the
    resident count and the module's switches that A/B scripts and tests change."""
    from flashssm.ops.checks import SSDDims
    from flashssm.ops.ssd import forward

    def pick(batch, seqlen):
        dims = SSDDims(batch, seqlen, 80, 64, 1, 128, batch, 256, None, (0.0, math.inf))
        cfg = pick_config(dims, torch.bfloat16, torch.device("cpu"))
        return cfg.group, cfg.early_publish

    monkeypatch.setattr(forward, "_resident_programs", lambda device: 264)
    assert [pick(1, n) for n in (2048, 8192, 32768, 131072)] == [(1, True), (2, True), (8, True), (32, True)]
    assert pick(8, 4096) == (8, False) and pick(32, 2048) == (8, False)
    assert pick(1, 131072) is not None and forward._config_for.cache_info().hits > 0
    monkeypatch.setattr(forward, "MAX_GROUP_TOKENS_EARLY", 4096)
    assert pick(1, 131072) == (16, True)
    monkeypatch.setattr(forward, "_resident_programs", lambda device: 2)
    assert pick(1, 131072) == (8, False)  # 80 chains for 2 programs: many, late, spans of 2048 tokens


def test_one_wave_spans(monkeypatch):
    """The Gluon kernel's early publish in one wave (`gluon_group`, chunks a program as a run-time span), for an
    H100's 264 resident programs: three even spans a sequence at batch 1 of the 2.7B shape (240 programs), as many as
    the wave holds for fewer heads, none where the wave would fill under ONE_WAVE_FILL of the GPU, for many chains or
    packed sequences, or with the switch off; and the span the kernel takes (`gluon_span`): the run-time span with its
    power-of-two ceiling as CHUNK, the constexpr span where a stride would take an offset within it past 2^31."""
    from flashssm.ops.checks import SSDDims
    from flashssm.ops.ssd import forward

    def dims(batch, seqlen, nheads=80, headdim=64, cu_seqlens=None):
        return SSDDims(batch, seqlen, nheads, headdim, 1, 128, batch if cu_seqlens is None else len(cu_seqlens) - 1,
                       256, cu_seqlens, (0.0, math.inf))

    def wave(d):
        return pick_config(d, torch.bfloat16, torch.device("cpu")).gluon_group

    monkeypatch.setattr(forward, "_resident_programs", lambda device: 264)
    monkeypatch.setattr(forward, "ONE_WAVE_TAILS", False)  # (even spans: `test_one_wave_tails` has the other rule)
    assert [wave(dims(1, n)) for n in (2048, 8192, 32768, 131072, 5000)] == [3, 11, 43, 171, 7]
    assert wave(dims(1, 32768, nheads=48)) == 26  # 5 spans a head: 240 programs
    assert wave(dims(1, 32768, nheads=24)) == 12  # 11 spans: 264
    assert wave(dims(1, 32768, headdim=128)) is None  # two headdim blocks, 160 chains: one span each leaves 104 idle
    assert wave(dims(2, 8192)) is None and wave(dims(8, 4096)) is None  # 160 chains; many (late publish)
    assert wave(dims(1, 512)) is None  # two chunks: 160 programs
    assert wave(dims(1, 32768, cu_seqlens=(0, 10000, 32768))) is None
    monkeypatch.setattr(forward, "ONE_WAVE", False)
    assert wave(dims(1, 32768)) is None
    monkeypatch.setattr(forward, "ONE_WAVE", True)
    monkeypatch.setattr(forward, "_resident_programs", lambda device: 2 * 114)  # an H100 PCIe: 114 SMs
    assert wave(dims(1, 32768)) is None  # 2 spans of 64 chunks: 160 programs of 228 (70 %)

    x = torch.empty(1, 1, 80, 64)
    cfg = LaunchConfig(64, 64, 4, 2, group=32, gluon_group=171)
    assert forward.gluon_span(dims(1, 131072), cfg, x, None) == (171 * 256, 256 * 256)
    assert forward.gluon_span(dims(1, 131072), dataclasses.replace(cfg, gluon_group=16), x) == (4096, 4096)
    assert forward.gluon_span(dims(1, 131072), dataclasses.replace(cfg, gluon_group=None), x) == (8192, 8192)
    assert forward.gluon_span(dims(1, 131072), dataclasses.replace(cfg, early_publish=False), x) == (8192, 8192)
    wide = torch.empty(3, 50000).t()  # a stride of 50000 along its dimension 1, as x's along seqlen in a wide input
    assert forward.gluon_span(dims(1, 1 << 20), dataclasses.replace(cfg, gluon_group=1366), x) == (1366 * 256,
                                                                                                  2048 * 256)
    assert forward.gluon_span(dims(1, 1 << 20), dataclasses.replace(cfg, gluon_group=1366), x, wide) == (8192, 8192)


def test_one_wave_tails(monkeypatch):
    """The one wave with the chains' last spans gathered in the spare slots (`one_wave_tails`, the Gluon kernel's
    TAILS): for an H100's or H200's 264 resident programs at batch 1 of the 2.7B shape (80 chains, three spans each,
    24 slots spare), four last spans a program in 20 programs, the other spans the fewest chunks for which four last
    spans take no longer than one; none where the even spans are as short, no slot is spare or the last spans are
    under TAILS_MIN_TOKENS; the plan's spans and programs, and where a launch takes it (`gluon_tails`)."""
    from flashssm.ops.checks import SSDDims
    from flashssm.ops.ssd import forward

    def dims(batch, seqlen, nheads=80, headdim=64, chunk=256):
        return SSDDims(batch, seqlen, nheads, headdim, 1, 128, batch, chunk, None, (0.0, math.inf))

    def plan(d):
        cfg = pick_config(d, torch.bfloat16, torch.device("cpu"))
        return cfg.gluon_group, cfg.gluon_tails

    monkeypatch.setattr(forward, "_resident_programs", lambda device: 264)
    assert plan(dims(1, 131072)) == (158, 4)  # 3 x 158 + 38 chunks; 4 x 38 = 152 <= 158 (even spans: 171)
    assert plan(dims(1, 32768)) == (40, 4)    # 3 x 40 + 8; 32 <= 40 (43)
    assert plan(dims(1, 8192)) == (11, None)  # 3 x 10 + 2: last spans of 512 tokens, under TAILS_MIN_TOKENS
    assert plan(dims(1, 2048)) == (3, None)   # 8 chunks: no span under 3 leaves four last spans within one
    monkeypatch.setattr(forward, "TAILS_MIN_TOKENS", 256)
    assert plan(dims(1, 8192)) == (10, 4)     # 3 x 10 + 2 (11)
    monkeypatch.setattr(forward, "TAILS_MIN_TOKENS", 2048)
    assert plan(dims(1, 32768, nheads=48)) == (24, 2)  # 5 spans of 24 + 8 for 48 chains, 24 slots spare (26)
    assert plan(dims(1, 32768, nheads=24)) == (12, None)  # 11 spans for 24 chains fill the 264 slots
    assert plan(dims(1, 32768, headdim=128)) == (None, None)  # 160 chains: no two spans each
    assert plan(dims(8, 4096)) == (None, None)  # many chains: late publish
    assert forward.one_wave_tails(dims(1, 77777, 7, chunk=64), 264) is None  # 37 spans of 33 pass the end
    monkeypatch.setattr(forward, "TAILS_MIN_TOKENS", 64)  # (the plan's arithmetic on shorter last spans too)
    for d in (dims(1, 131072), dims(1, 32768), dims(1, 8192), dims(1, 32768, nheads=48), dims(1, 100000, 40),
              dims(2, 50000, 40, chunk=128), dims(1, 100000, 7, chunk=64)):
        chains = forward._gluon_chains(d)
        group, tails = forward.one_wave_tails(d, 264)
        chunks = -(-d.seqlen // d.chunk_size)
        spans = 264 // chains
        last = chunks - spans * group
        assert 1 <= last and tails * last <= group < -(-chunks // spans), d  # even, and shorter than even spans
        assert tails * (last + spans) > group - 1, d  # the least such span: one chunk fewer would not do
        assert spans * chains + -(-chains // tails) <= 264, d  # one wave
    monkeypatch.setattr(forward, "TAILS_MIN_TOKENS", 2048)
    monkeypatch.setattr(forward, "ONE_WAVE_TAILS", False)
    assert plan(dims(1, 131072)) == (171, None)

    x = torch.empty(1, 1, 80, 64)
    d = dims(1, 131072)
    cfg = LaunchConfig(64, 64, 4, 2, group=32, gluon_group=158, gluon_tails=4)
    span, chunk = forward.gluon_span(d, cfg, x)
    assert (span, chunk) == (158 * 256, 256 * 256) and forward.gluon_tails(d, cfg, span, chunk) == 4
    wide = torch.empty(3, 60000).t()  # a stride that takes the constexpr span: no tails
    span, chunk = forward.gluon_span(d, cfg, x, wide)
    assert (span, chunk) == (8192, 8192) and forward.gluon_tails(d, cfg, span, chunk) == 0
    assert forward.gluon_tails(dims(1, 158 * 256), cfg, 158 * 256, 256 * 256) == 0  # one span: no last one after
    assert forward.gluon_tails(d, dataclasses.replace(cfg, early_publish=False), 158 * 256, 256 * 256) == 0
    with pytest.raises(ValueError, match="gluon_tails"):
        LaunchConfig(64, 64, 4, 2, gluon_group=3, gluon_tails=0)


def test_preparation_in_run_time_spans():
    """The preparation launch with a run-time span (the Gluon kernel's one wave): each span row's dt and cumsums,
    ragged last span and sub-chunk included, are those of the launch whose span is the constexpr, in rows laid out by
    the power-of-two ceiling."""
    from flashssm.ops.ssd import forward

    for batch, seqlen, nheads, group in ((2, 1000, 3, 3), (1, 700, 40, 5), (3, 64, 2, 2)):
        kw = ssd_inputs(batch, seqlen, nheads, 16, 16, 1, dtype=torch.float32, device="cuda" if HAS_GPU else "cpu",
                        dt_bias=True, dt_softplus=True)
        dims = check_ssd_scan(**kw, chunk_size=64, dt_limit=(1e-3, 2.0))
        span, ceiling = 64 * group, 64 * forward._runtime.next_power_of_2(group)
        rows = forward._chunk_rows(dims, span)
        args = (kw["x"], kw["dt"], kw["A"], kw["dt_bias"], True)
        fixed = forward._decays(dims, 32, span, rows, *args)
        given = forward._decays(dims, 32, ceiling, rows, *args, span=span)
        assert given.shape == (rows, nheads, 2, ceiling)
        for r in range(rows):
            n = -(-min(span, seqlen - (r // batch) * span) // 32) * 32  # written up to the ragged sub-chunk's end
            assert torch.equal(given[r, :, :, :n], fixed[r, :, :, :n]), (batch, seqlen, group, r)


@pytest.mark.parametrize("maxnreg", [0, -1, 8, 256, 128.0])
def test_launch_config_rejects_bad_register_cap(maxnreg):
    with pytest.raises(ValueError, match="maxnreg"):
        LaunchConfig(64, 64, 4, 2, maxnreg=maxnreg)
    assert LaunchConfig(64, 64, 4, 2, maxnreg=168).maxnreg == 168


@pytest.mark.parametrize("sub_a", [0, 8, 24, 64.0])
def test_launch_config_rejects_bad_own_step(sub_a):
    with pytest.raises(ValueError, match="sub_a"):
        LaunchConfig(64, 64, 4, 2, sub_a=sub_a)
    assert LaunchConfig(64, 64, 4, 2, sub_a=128).sub_a == 128


# The Gluon late-publish forward (forward_gluon.py): Hopper only, so the interpreter tests its dispatch and its offline
# compile, the GPU its results (against float64 and against the Triton kernel, which must agree to the rounding).

def _gluon_case(batch=2, seqlen=300, nheads=4, headdim=64, dstate=128, ngroups=1, dtype=torch.bfloat16, **opts):
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, dtype=dtype, device="cpu", **opts)
    return kw, check_ssd_scan(**kw, chunk_size=256)


def test_gluon_blocker():
    """What keeps a call off the Gluon kernel: each reason alone, on CPU tensors (the caller adds `x.is_cuda`)."""
    from flashssm.ops.ssd import forward_gluon as fg

    if fg.gluon is None:
        pytest.skip("this Triton has no Gluon")
    kw, dims = _gluon_case(D="hp", z=True)
    ok = dict(output=True, stores_states=False, capability=(9, 0))
    assert fg.blocker(dims, kw["x"], kw["B"], kw["C"], kw["z"], **ok) is None
    assert "capability" in fg.blocker(dims, kw["x"], kw["B"], kw["C"], None, **{**ok, "capability": (8, 0)})
    assert "capability" in fg.blocker(dims, kw["x"], kw["B"], kw["C"], None, **{**ok, "capability": (10, 0)})
    assert "capability" in fg.blocker(dims, kw["x"], kw["B"], kw["C"], None, **{**ok, "capability": None})
    assert "output" in fg.blocker(dims, kw["x"], kw["B"], kw["C"], None, **{**ok, "output": False})
    assert "states" in fg.blocker(dims, kw["x"], kw["B"], kw["C"], None, **{**ok, "stores_states": True})
    kw16, dims16 = _gluon_case(dtype=torch.float16)
    assert fg.blocker(dims16, kw16["x"], kw16["B"], kw16["C"], None, **ok) is None  # the scaled fp16 form
    kw32, dims32 = _gluon_case(dtype=torch.float32)
    assert "bf16" in fg.blocker(dims32, kw32["x"], kw32["B"], kw32["C"], None, **ok)
    assert "bf16" in fg.blocker(dims, kw["x"], kw16["B"], kw["C"], None, **ok)  # mixed 16-bit dtypes
    for shape in ((32, 128), (96, 128), (64, 16), (64, 256)):
        kws, dimss = _gluon_case(headdim=shape[0], dstate=shape[1])
        assert "headdim" in fg.blocker(dimss, kws["x"], kws["B"], kws["C"], None, **ok)
    strided = kw["x"].transpose(1, 2).contiguous().transpose(1, 2)  # (b, t, h, p) view of (b, h, t, p): fine
    assert fg.blocker(check_ssd_scan(strided, kw["dt"], kw["A"], kw["B"], kw["C"], chunk_size=256), strided,
                      kw["B"], kw["C"], None, **ok) is None
    cols = kw["x"].transpose(-1, -2).contiguous().transpose(-1, -2)  # headdim not the inner axis
    assert "stride" in fg.blocker(dims, cols, kw["B"], kw["C"], None, **ok)
    for extra in (8, 24):  # rows of 16-byte multiples that the JIT does not mark divisible by 16 (elements)
        wide = torch.zeros(*kw["x"].shape[:2], 4 * 64 + extra, dtype=torch.bfloat16)[..., :4 * 64].unflatten(-1, (4, 64))
        assert "stride" in fg.blocker(dims, wide, kw["B"], kw["C"], None, **ok)
    wide = torch.zeros(*kw["x"].shape[:2], 4 * 64 + 16, dtype=torch.bfloat16)[..., :4 * 64].unflatten(-1, (4, 64))
    assert fg.blocker(dims, wide, kw["B"], kw["C"], None, **ok) is None
    odd = torch.empty(kw["x"].numel() + 1, dtype=torch.bfloat16)[1:].view_as(kw["x"])  # a 2-byte aligned start
    assert "aligned" in fg.blocker(dims, odd, kw["B"], kw["C"], None, **ok)
    assert "z" in fg.blocker(dims, kw["x"], kw["B"], kw["C"], kw["z"].transpose(-1, -2).contiguous().transpose(-1, -2),
                             **ok)
    one_row = {k: v[:1] if k in ("x", "dt", "B", "C", "z") else v for k, v in kw.items() if k != "initial_states"}
    packed = check_ssd_scan(**one_row, chunk_size=256, cu_seqlens=torch.tensor([0, 100, 300]))
    assert fg.blocker(packed, kw["x"][:1], kw["B"][:1], kw["C"][:1], None, **ok) is None  # packed: the table's spans
    empty = check_ssd_scan(**one_row, chunk_size=256, cu_seqlens=torch.tensor([0, 100, 100, 300]))
    assert "empty" in fg.blocker(empty, kw["x"][:1], kw["B"][:1], kw["C"][:1], None, **ok)
    enabled = fg.ENABLED
    try:
        fg.ENABLED = False
        assert "FLASHSSM_GLUON" in fg.blocker(dims, kw["x"], kw["B"], kw["C"], None, **ok)
    finally:
        fg.ENABLED = enabled


def test_tma_blocker(monkeypatch):
    """What keeps a Gluon launch off the TMA form (`forward_gluon.tma_blocker`), each reason alone, on CPU tensors
    (the descriptors themselves are made on CUDA tensors only): the switch and its modes (True: bf16 launches that
    store states; "always": every one), the early publish, packed sequences, a length that is no multiple of 64, z or
    D per element, and tokens that are not rows of one 2-D view."""
    from flashssm.ops.ssd import forward_gluon as fg

    kw, dims = _gluon_case(batch=2, seqlen=320, D="h")
    states = torch.empty(1)
    x, B, C, D = kw["x"], kw["B"], kw["C"], kw["D"]
    monkeypatch.setattr(fg, "TMA", True)
    assert fg.tma_blocker(dims, x, B, C, None, D, False, states) is None
    assert fg.tma_descriptors(dims, x, B, C, None, D, False, states) is None  # (CPU tensors)
    assert "states" in fg.tma_blocker(dims, x, B, C, None, D, False, None)
    kw16, dims16 = _gluon_case(batch=2, seqlen=320, dtype=torch.float16)
    assert "bf16" in fg.tma_blocker(dims16, kw16["x"], kw16["B"], kw16["C"], None, None, False, states)
    monkeypatch.setattr(fg, "TMA", "always")
    assert fg.tma_blocker(dims, x, B, C, None, D, False, None) is None
    assert fg.tma_blocker(dims16, kw16["x"], kw16["B"], kw16["C"], None, None, False, None) is None
    assert "early" in fg.tma_blocker(dims, x, B, C, None, D, True, states)
    kwr, dimsr = _gluon_case(batch=2, seqlen=300)
    assert "multiple" in fg.tma_blocker(dimsr, kwr["x"], kwr["B"], kwr["C"], None, None, False, states)
    assert "z" in fg.tma_blocker(dims, x, B, C, torch.empty(1), D, False, states)
    assert "per element" in fg.tma_blocker(dims, x, B, C, None, torch.empty(4, 64), False, states)
    one = {k: v[:1] if k in ("x", "dt", "B", "C") else v for k, v in kw.items() if k != "initial_states"}
    packed = check_ssd_scan(**one, chunk_size=256, cu_seqlens=torch.tensor([0, 128, 320]))
    assert "packed" in fg.tma_blocker(packed, x[:1], B[:1], C[:1], None, D, False, states)
    apart = x.transpose(0, 1).contiguous().transpose(0, 1)  # (tokens of one sequence, then the next: not one view)
    assert "rows" in fg.tma_blocker(dims, apart, B, C, None, D, False, states)
    heads = torch.zeros(*x.shape[:3], x.shape[3] + 16, dtype=x.dtype)[..., :x.shape[3]]  # (heads not adjacent)
    assert "rows" in fg.tma_blocker(dims, heads, B, C, None, D, False, states)
    monkeypatch.setattr(fg, "TMA", False)
    assert "off" in fg.tma_blocker(dims, x, B, C, None, D, False, states)


@pytest.mark.parametrize("chains, chunks, slots", [(640, 16, 264), (2560, 8, 264), (529, 3, 264), (24, 4, 7),
                                                   (12, 5, 5), (10, 1, 5), (32, 16, 5), (14, 7, 7)])
def test_balanced_pieces(chains, chunks, slots):
    """The balanced pieces' plan (`forward.balanced_pieces`, which the Gluon kernel's PIECES form computes from its
    ticket): every chain's chunks swept once, in order, in at most two pieces; every slot the same share to a chunk;
    a cut chain's first piece its slot's first and the next slot's, its second piece its slot's last. Swept with the
    slots in ticket order (slot s + 1 first), a chunk a unit of time, no second piece waits for its first: every slot
    ends at its share, the makespan the largest share."""
    from flashssm.ops.ssd.forward import balanced_pieces

    plan = balanced_pieces(chains, chunks, slots)
    total = chains * chunks
    assert [sum(p[2] for p in pieces) for pieces in plan] == [
        total * (s + 1) // slots - total * s // slots for s in range(slots)]
    seen = {}
    for s, pieces in enumerate(plan):
        for i, (c, first, n, k, n_pieces) in enumerate(pieces):
            seen.setdefault(c, []).append((k, first, n, n_pieces, s, i))
    assert sorted(seen) == list(range(chains))
    for c, parts in seen.items():
        parts.sort()
        assert [p[0] for p in parts] == list(range(len(parts))) and len(parts) <= 2
        assert all(p[3] == len(parts) for p in parts)
        assert parts[0][1] == 0 and sum(p[2] for p in parts) == chunks
        if len(parts) == 2:
            (_, _, n0, _, s0, i0), (_, first1, _, _, s1, i1) = parts
            assert first1 == n0 and s0 == s1 + 1 and i0 == 0 and i1 == len(plan[s1]) - 1
    ends, clock = {}, [0] * slots
    for s in reversed(range(slots)):  # (tickets: slot slots - 1 first)
        for c, first, n, k, _ in plan[s]:
            start = clock[s] if k == 0 else max(clock[s], ends[c])
            assert start == clock[s], f"slot {s} waits for chain {c}'s first piece"
            clock[s] = ends[c] = start + n
    assert max(clock) == -(-total // slots)
    with pytest.raises(ValueError, match="longer than a slot"):
        balanced_pieces(slots, 2, 2 * slots - 1)


def test_pieces_blocker(monkeypatch):
    """What keeps a Gluon launch off the balanced pieces (`forward.pieces_blocker`), each reason alone, on CPU tensors
    (on the GPU the last reason goes): the switch, the early publish, too few chains for the slots, a launch the TMA
    form does not take (z; fp16 storing states), offsets past 2^31 within a sequence; with PIECES the TMA form takes
    launches TMA True alone would not (no states, fp16)."""
    from flashssm.ops.ssd import forward_gluon as fg
    from flashssm.ops.ssd.forward import pieces_blocker

    kw, dims = _gluon_case(batch=2, seqlen=320, D="h")  # 8 chains
    x, B, C, D = kw["x"], kw["B"], kw["C"], kw["D"]
    late = LaunchConfig(64, 64, 4, 2, False, group=1, prefetch=True, pre_decays=True)
    monkeypatch.setattr(fg, "TMA", True)
    monkeypatch.setattr(fg, "PIECES", True)
    monkeypatch.setattr(fg, "PIECES_SLOTS", 4)
    assert "GPU" in pieces_blocker(dims, late, x, B, C, None, D, None)
    assert "GPU" in pieces_blocker(dims, late, x, B, C, None, D, torch.empty(1))
    assert "early" in pieces_blocker(dims, dataclasses.replace(late, early_publish=True), x, B, C, None, D, None)
    monkeypatch.setattr(fg, "PIECES_SLOTS", 5)
    assert "fewer than two" in pieces_blocker(dims, late, x, B, C, None, D, None)
    monkeypatch.setattr(fg, "PIECES_SLOTS", 4)
    assert "TMA form" in pieces_blocker(dims, late, x, B, C, torch.empty(1), D, None)
    kw16, dims16 = _gluon_case(batch=2, seqlen=320, dtype=torch.float16)
    x16, B16, C16 = kw16["x"], kw16["B"], kw16["C"]
    assert "GPU" in pieces_blocker(dims16, late, x16, B16, C16, None, None, None)
    assert "fp16" in pieces_blocker(dims16, late, x16, B16, C16, None, None, torch.empty(1))
    wide = torch.empty(0, device="meta", dtype=x.dtype).as_strided(x.shape, (320 * 2**23, 2**23, 64, 1))
    assert "2^31" in pieces_blocker(dims, late, wide, B, C, None, D, None)
    monkeypatch.setattr(fg, "TMA", False)
    assert "TMA form" in pieces_blocker(dims, late, x, B, C, None, D, None)
    monkeypatch.setattr(fg, "PIECES", False)
    assert "off" in pieces_blocker(dims, late, x, B, C, None, D, None)


@pytest.mark.parametrize("early", [False, True], ids=["late", "early"])
@pytest.mark.parametrize("pdl", [False, True], ids=["plain", "pdl"])
def test_gluon_pdl_launch_options(pdl, early, monkeypatch):
    """forward_gluon.PDL, on the host (CPU tensors, the launches recorded, none run): the sweep takes Triton's
    `launch_pdl` option exactly when its kernel is compiled to wait for the preparation launch (PDL), and the
    preparation launch lets it start (DEPENDENTS) then too; off, none of the three. A sweep started early whose kernel
    did not wait would read the decays before they are written."""
    from flashssm import _runtime
    from flashssm.ops.ssd import forward, forward_gluon

    if forward_gluon.gluon is None:
        pytest.skip("this Triton has no Gluon")
    launched = []
    monkeypatch.setattr(_runtime, "launch", lambda kernel, grid, args, device, **meta: launched.append(
        (getattr(kernel, "__name__", None) or kernel.fn.__name__, meta)))
    monkeypatch.setattr(forward_gluon, "PDL", pdl)
    kw, dims = _gluon_case(batch=2, seqlen=320, D="h")
    cfg = LaunchConfig(64, 64, 4, 2, early, group=1, prefetch=not early, pre_decays=True)
    y = torch.empty_like(kw["x"])
    forward._run_gluon(dims, cfg, kw["x"], kw["dt"], kw["A"], kw["B"], kw["C"], kw["D"], None, None, False, None,
                       None, y, None, None)
    assert [name for name, _ in launched] == ["_ssd_decays_kernel", "_ssd_fwd_gluon_kernel"]
    (_, prep), (_, sweep) = launched
    assert prep["DEPENDENTS"] is pdl and sweep["PDL"] is pdl and sweep["launch_pdl"] is pdl


def test_gluon_never_on_cpu():
    from flashssm.ops.ssd.forward import gluon_blocker

    kw, dims = _gluon_case()
    cfg = pick_config(dims, torch.bfloat16, kw["x"].device)
    assert gluon_blocker(dims, kw["x"], kw["B"], kw["C"], None) is not None
    assert cfg.gluon  # the default; the dispatch's own checks decide


_COMPILE_GLUON_FOR_HOPPER = """
import sys
sys.path.insert(0, sys.argv[1])
from benchmarks.offline_ssd_forward import compile_gluon_forward, ptxas_usage
# (a run-time span: early, 16-bit move only; packed: the early form, which reads the table's span twice, storing
# the tiles' states at the table's rows)
for early, span_given, varlen in ((False, False, False), (True, False, False), (True, True, False),
                                  (True, False, True)):
    # y moved in fp32; in 16 bits (the states stored for the tiles backward, which runs without z)
    for z, d, n, d_head in ((True, True, 128, False), (False, True, 64, True))[max(span_given, varlen):]:
        k = compile_gluon_forward(z, d, n, extra={"EARLY": early, "D_HEAD": d_head, "SPAN_GIVEN": span_given,
                                                  "STORE_STATES": not z, "STATE_CHUNK": 128, "IS_VARLEN": varlen},
                                  sizes={"batch": 1} if varlen else None)
        assert "wgmma.mma_async" in k.asm["ptx"] and "wgmma.wait_group.sync.aligned 1" in k.asm["ptx"], "no async wgmma"
        assert "acq_rel" not in k.asm["ptx"], "an acq_rel atomic (the ticket's: it would invalidate the SM's L1)"
        assert len(k.asm["cubin"]) > 0
        # ptxas serialises every wgmma of a kernel where it finds an accumulator read while its product may be in
        # flight (info C7514): the asynchrony would be gone without an error
        assert "C7514" not in ptxas_usage(k.asm["ptx"], None), f"ptxas serialises the wgmmas (early {early}, z {z})"
        # two programs an SM on an H100 (228 KB, 1 KB of it reserved a program): one program alone would halve the
        # resident warps
        assert k.metadata.shared <= 228 * 1024 // 2 - 1024, f"{k.metadata.shared} bytes of shared memory"
# the early publish with the last spans gathered (TAILS: a late-form sweep beside the early one in the same kernel)
for z, d, d_head in ((False, True, True), (True, True, False)):
    k = compile_gluon_forward(z, d, 128, extra={"EARLY": True, "D_HEAD": d_head, "SPAN_GIVEN": True, "TAILS": 4,
                                                "STORE_STATES": not z, "STATE_CHUNK": 128},
                              sizes={"batch": 1, "n_programs": 260})
    assert "wgmma.wait_group.sync.aligned 1" in k.asm["ptx"], "no async wgmma (TAILS)"
    assert "C7514" not in ptxas_usage(k.asm["ptx"], None), f"ptxas serialises the wgmmas (TAILS, z {z})"
    assert k.metadata.shared <= 228 * 1024 // 2 - 1024, f"{k.metadata.shared} bytes of shared memory (TAILS)"
# fp16 (its scaled operands: more registers and a reduction across the warps for H), late and early, both moves of y
# (without z: storing the tiles' scaled fp16 states from shared memory, their units beside)
for early in (False, True):
    for z, d, d_head in ((True, True, False), (False, True, True)):
        k = compile_gluon_forward(z, d, 128, extra={"EARLY": early, "D_HEAD": d_head, "STORE_STATES": not z,
                                                    "STATE_CHUNK": 128}, in_type="*fp16", states_type="*fp16")
        assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in k.asm["ptx"], "no fp16 wgmma"
        assert "wgmma.wait_group.sync.aligned 1" in k.asm["ptx"], "no async wgmma"
        assert "C7514" not in ptxas_usage(k.asm["ptx"], None), f"ptxas serialises the fp16 wgmmas (early {early})"
        assert k.metadata.shared <= 228 * 1024 // 2 - 1024, f"{k.metadata.shared} bytes of shared memory (fp16)"
# the TMA form (`forward_gluon.TMA`): the late publish's rows by tensor descriptors, bf16 and fp16, y moved in 16 bits
# (the fp32 move's scratch leaves no room for the mbarriers), with and without storing the states
for in_type, d, stores in (("*bf16", False, False), ("*bf16", True, True), ("*fp16", True, False)):
    k = compile_gluon_forward(False, d, 128, extra={"TMA": True, "D_HEAD": d, "STORE_STATES": stores,
                                                    "TMA_STATES": stores, "STATE_CHUNK": 128}, in_type=in_type,
                              states_type=in_type)
    assert "cp.async.bulk.tensor.2d" in k.asm["ptx"] and "wgmma.wait_group.sync.aligned 1" in k.asm["ptx"]
    assert "C7514" not in ptxas_usage(k.asm["ptx"], None), "ptxas serialises the TMA form's wgmmas"
    assert k.metadata.shared <= 228 * 1024 // 2 - 1024, f"{k.metadata.shared} bytes of shared memory (TMA)"
# PDL (`forward_gluon.PDL`): one wait for the preparation launch, before any read of what it wrote (dt and the
# cumsums, the 4-byte cp.async); in the late publish after the first stage's x, B and C copies are issued
import re
for early, tma in ((False, False), (False, True), (True, False)):
    k = compile_gluon_forward(False, False, 128, extra={"EARLY": early, "TMA": tma, "PDL": True})
    ptx = k.asm["ptx"]
    assert ptx.count("griddepcontrol.wait") == 1, "PDL: not one wait for the preparation launch"
    before = ptx[:ptx.index("griddepcontrol.wait")]
    sizes = re.findall(r"cp\\.async\\.\\w+\\.shared\\.global \\[[^\\]]*\\], \\[[^\\]]*\\], (\\w+)", before)
    assert "0x4" not in sizes, "PDL: dt or a cumsum copied before the wait"
    if not early:
        assert sizes.count("0x10") == 20 or ("cp.async.bulk.tensor" in before and tma), "PDL: no rows on their way"
k = compile_gluon_forward(False, False, 128)
assert "griddepcontrol" not in k.asm["ptx"]
print("compiled")
"""


def test_gluon_forward_compiles_for_hopper():
    """The Gluon kernel compiled for sm_90 without a GPU, by this machine's Triton (Gluon's API moves between Triton
    versions: this is where a rename shows first), with its products asynchronous (a wait for all but two)."""
    import os
    import subprocess
    import sys

    from flashssm.ops.ssd import forward_gluon

    if HAS_GPU:
        pytest.skip("the GPU tests compile and run it")
    if forward_gluon.gluon is None:
        pytest.skip("this Triton has no Gluon")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", _COMPILE_GLUON_FOR_HOPPER, root], env=env, capture_output=True,
                         text=True, timeout=600)
    if run.returncode and ("ptxas" in run.stderr.lower() or "ImportError" in run.stderr):
        pytest.skip(f"no offline compile here: {run.stderr.strip().splitlines()[-1]}")
    assert run.returncode == 0, run.stderr[-3000:]


GLUON_CASES = [  # batch, seqlen, nheads, headdim, dstate, ngroups, chunk, group (chunks a program)
    (3, 1000, 4, 64, 128, 2, 256, 2),
    (2, 777, 6, 128, 64, 3, 128, 3),
    (1, 321, 2, 64, 128, 1, 64, 1),
    (2, 1, 4, 64, 128, 1, 256, 1),
    (4, 4096, 8, 64, 128, 1, 256, 8),
    (1, 9000, 2, 64, 128, 1, 256, 32),  # the early form's longest spans (MAX_GROUP_TOKENS_EARLY), a ragged second
]


def _on_gluon(compiled) -> bool:
    name = getattr(compiled, "name", None) or compiled.metadata.name
    return "gluon" in name


def _gluon_against_triton(dims, kw, early, group, state_dtype, limit, cu_seqlens=None):
    """The Gluon kernel's launch (late or early publish, spans of `group` chunks) against float64 and against the
    Triton kernel's on the same configuration: y, the final states and y before the gate. Late: the Triton kernel's
    arithmetic, equal up to the last bit of a few rounding flips; early: other roundings. Returns (config, y, final
    states)."""
    from flashssm.ops.ssd.forward import gluon_blocker

    dtype = kw["x"].dtype
    base = pick_config(dims, dtype, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, early, group=group, prefetch=not early,
                       pre_decays=True)
    assert gluon_blocker(dims, kw["x"], kw["B"], kw["C"], kw.get("z")) is None
    y, h, ypre, compiled = launch(dims, **kw, return_final_states=True, config=cfg, state_dtype=state_dtype,
                                  store_ypre=True)
    assert _on_gluon(compiled)
    y_t, h_t, ypre_t, compiled_t = launch(dims, **kw, return_final_states=True, state_dtype=state_dtype,
                                          store_ypre=True, config=dataclasses.replace(cfg, gluon=False))
    assert not _on_gluon(compiled_t)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=dims.chunk_size, dt_limit=limit,
                                        cu_seqlens=cu_seqlens)
    assert_close(y, y_ref, dtype, "y")
    assert rel_err(h, h_ref) < max(TOLERANCES[dtype], TOLERANCES[state_dtype]), "final_states"
    assert (y.float() - y_t.float()).abs().max() <= 1e-2 * y_t.float().abs().max()
    # (fp16: the two kernels scale their 16-bit operands by other units, so the late form's states round apart too)
    close = 1e-2 if early or dtype == torch.float16 else 1e-3
    assert (h.float() - h_t.float()).abs().max() <= close * h_t.float().abs().max()
    if "z" in kw:
        assert (ypre.float() - ypre_t.float()).abs().max() <= 1e-2 * ypre_t.float().abs().max()
    return cfg, y, h


@pytest.mark.gpu
@pytest.mark.parametrize("state_dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("opts", ["none", "D-h", "all"])
@pytest.mark.parametrize("case", GLUON_CASES, ids=[f"{ssd_id(*c[:6])}-Q{c[6]}-G{c[7]}" for c in GLUON_CASES])
@pytest.mark.parametrize("early", [False, True], ids=["late", "early"])
def test_gpu_gluon_forward(case, opts, state_dtype, early):
    """The Gluon kernel, late and early publish, against float64 and against the Triton kernel on the same launch: y,
    y before the gate and the final states, ragged last sub-chunks, one token, spans of 1 to 8 chunks, two headdim
    blocks, dstate 64, grouped B/C, every option and state dtype. Late: the Triton kernel's arithmetic (a few rounding
    flips); early: its own state weights every token to the span's end at once, where the Triton kernel rescales
    sub-chunk by sub-chunk (the same math, other roundings of w x)."""
    _gluon_forward_case(case, opts, torch.bfloat16, state_dtype, early)


def _gluon_forward_case(case, opts, dtype, state_dtype, early):
    """A GLUON_CASES case with the options `opts` (none, D-h, all) in `dtype`: `_gluon_against_triton`, then the same
    launch again, the same bits."""
    batch, seqlen, nheads, headdim, dstate, ngroups, chunk, group = case
    extra = dict(none={}, **{"D-h": dict(D="h")}, all=dict(D="hp", z=True, dt_bias=True, dt_softplus=True,
                                                              initial_states=True))[opts]
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, dtype=dtype, device="cuda", **extra)
    limit = (1e-3, 0.5) if opts == "all" else (0.0, float("inf"))
    dims = check_ssd_scan(**kw, chunk_size=chunk, dt_limit=limit)
    cfg, y, h = _gluon_against_triton(dims, kw, early, group, state_dtype, limit)
    y2, h2, _, _ = launch(dims, **kw, return_final_states=True, config=cfg, state_dtype=state_dtype, store_ypre=True)
    assert torch.equal(y, y2) and torch.equal(h, h2), "two runs differ"


@pytest.mark.gpu
@pytest.mark.parametrize("opts", ["none", "all"])
@pytest.mark.parametrize("case", GLUON_CASES, ids=[f"{ssd_id(*c[:6])}-Q{c[6]}-G{c[7]}" for c in GLUON_CASES])
@pytest.mark.parametrize("early", [False, True], ids=["late", "early"])
def test_gpu_gluon_forward_fp16(case, opts, early):
    """The Gluon kernel's fp16 form (H, w x and m go into their products over powers of two at or above their largest
    values: `_pow2_at_least`), late and early publish, against float64 and against the Triton kernel's fp16 form on the
    same launch (which scales by other units: equal within a rounding of the largest values); two runs, the same
    bits."""
    _gluon_forward_case(case, opts, torch.float16, torch.float32 if opts == "none" else torch.float16, early)


@pytest.mark.gpu
@pytest.mark.parametrize("early", [False, True], ids=["late", "early"])
@pytest.mark.parametrize("regime", ["dt-near-0", "large-states", "negative-dt"])
def test_gpu_gluon_fp16_keeps_its_digits(regime, early):
    """The Gluon kernel's fp16 form at the two ends of fp16's range. dt near 0 (softplus(-14), ~1e-6): H, w x and m
    would be fp16 subnormals unscaled (y 6x the cost of its own rounding in the Triton kernel before its scaling);
    states past fp16's largest value (x ~ 1000, dt ~ 1, slow decays: |H| up to ~4e5, C small so that y stays in
    range): H would round to inf unscaled; a dt of -1 among dt ~ 1e-6 (dt_limit below 0), whose w x a unit from the
    largest w rather than |w| rounded to inf (`test_fp16_with_a_negative_dt_keeps_its_range`, the Triton kernel's).
    Each way y within twice the cost of rounding the float64 result to fp16, and the final states close to float64."""
    kw = ssd_inputs(2, 700, 4, 64, 128, 1, dtype=torch.float16, device="cuda", D="h", dt_bias=True, dt_softplus=True,
                    initial_states=True)
    limit = (0.0, math.inf)
    if regime == "dt-near-0":
        kw["dt"] = torch.full_like(kw["dt"], -14.0) + 0.5 * torch.rand_like(kw["dt"])
    elif regime == "negative-dt":  # tokens 64 and 256 start sub-chunks (and 256 a chunk)
        kw = _with_a_negative_dt(kw, [64, 256])
        limit = (-math.inf, math.inf)
    else:
        kw["x"] = (kw["x"].float() * 1000).half()
        kw["C"] = (kw["C"].float() * 0.001).half()
        kw["dt"] = torch.randn_like(kw["dt"]) * 0.3 + 0.5
        kw["A"] = -torch.rand_like(kw["A"]) * 1e-3
        kw["initial_states"] = kw["initial_states"] * 1e5  # (a third or more of the states past 65504)
    dims = check_ssd_scan(**kw, chunk_size=256, dt_limit=limit)
    base = pick_config(dims, torch.float16, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, early, group=2, prefetch=not early,
                       pre_decays=True)
    y, h, _, compiled = launch(dims, **kw, return_final_states=True, config=cfg)
    assert _on_gluon(compiled)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=256, dt_limit=limit)
    if regime == "large-states":
        assert h_ref.abs().max() > 65504 and y_ref.abs().max() < 65504 / 4, "the case no longer exercises it"
    floor = rel_err(y_ref.half(), y_ref)
    assert 0 < floor and rel_err(y, y_ref) <= 2 * floor, (rel_err(y, y_ref), floor)
    assert rel_err(h, h_ref) <= 2e-3, rel_err(h, h_ref)


GLUON_TMA_CASES = [  # batch, seqlen, nheads, headdim, dstate, ngroups, chunk, group; dtype; TMA taken
    (3, 1024, 4, 64, 128, 2, 256, 2, torch.bfloat16, True),
    (2, 768, 6, 128, 64, 3, 128, 3, torch.bfloat16, True),   # two headdim blocks, dstate 64, grouped B/C
    (4, 4096, 8, 64, 128, 1, 256, 8, torch.float16, True),   # fp16's scaled operands
    (1, 320, 2, 64, 128, 1, 64, 1, torch.bfloat16, True),    # batch 1: no row of another sequence after the last
    (2, 1000, 4, 64, 128, 1, 256, 2, torch.bfloat16, False),  # a ragged last sub-chunk: cp.async, as before
]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["own", "xbc"])
@pytest.mark.parametrize("opts", ["none", "states", "all"])
@pytest.mark.parametrize("case", GLUON_TMA_CASES, ids=[f"{ssd_id(*c[:6])}-Q{c[6]}-G{c[7]}-{str(c[8])[6:]}"
                                                        for c in GLUON_TMA_CASES])
def test_gpu_gluon_tma_same_bits(case, opts, layout, monkeypatch):
    """forward_gluon.TMA: the late publish's x, B and C rows by the tensor memory accelerator (2-D descriptors over
    batch x seqlen rows) move the same bytes into the same shared-memory layout as cp.async: y, y before the gate,
    the final states and the states stored for the tiles backward the same bits with it on and off, and against
    float64; where a sub-chunk would cross a sequence's end (seqlen not a multiple of 64) it keeps cp.async. `xbc`: x,
    B and C as column blocks of one (batch, seqlen, width) tensor, as a Mamba-2 layer's conv output gives them (row
    strides past their widths)."""
    from flashssm.ops.ssd import forward_gluon

    batch, seqlen, nheads, headdim, dstate, ngroups, chunk, group, dtype, taken = case
    extra = dict(none={}, states=dict(D="h", dt_bias=True, dt_softplus=True, initial_states=True),
                 all=dict(D="hp", z=True, dt_bias=True, dt_softplus=True, initial_states=True))[opts]
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, dtype=dtype, device="cuda", **extra)
    if layout == "xbc":  # one buffer with the three as column blocks, and 16 columns of something else after them
        widths = [nheads * headdim, ngroups * dstate, ngroups * dstate]
        whole = torch.randn(batch, seqlen, sum(widths) + 16, device="cuda").to(dtype)
        x, B, C = torch.split(whole[..., :sum(widths)], widths, dim=-1)
        whole[..., :widths[0]] = kw["x"].flatten(2)
        whole[..., widths[0]:widths[0] + widths[1]] = kw["B"].flatten(2)
        whole[..., widths[0] + widths[1]:sum(widths)] = kw["C"].flatten(2)
        kw.update(x=x.unflatten(-1, (nheads, headdim)), B=B.unflatten(-1, (ngroups, dstate)),
                  C=C.unflatten(-1, (ngroups, dstate)))
    limit = (1e-3, 0.5) if opts == "all" else (0.0, float("inf"))
    dims = check_ssd_scan(**kw, chunk_size=chunk, dt_limit=limit)
    base = pick_config(dims, dtype, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, False, group=group, prefetch=True,
                       pre_decays=True)
    state_chunk = chunk if dtype == torch.bfloat16 and opts == "states" else None  # (as a training forward stores)
    outs = []
    for tma in (False, "always"):
        monkeypatch.setattr(forward_gluon, "TMA", tma)
        monkeypatch.setattr(forward_gluon, "TMA_STATES", bool(tma))  # (bf16's stored states by TMA stores too)
        chosen = forward_gluon.tma_descriptors(dims, kw["x"], kw["B"], kw["C"], kw.get("z"), kw.get("D"), False)
        assert (chosen is not None) == (bool(tma) and taken and opts != "all")  # (z: the fp32 move of y, no room)
        y, h, ypre, compiled = launch(dims, **kw, return_final_states=True, config=cfg, store_ypre="z" in kw)
        assert _on_gluon(compiled)
        got = [y, h] + ([ypre] if "z" in kw else [])
        if state_chunk is not None:
            from flashssm.ops.ssd.forward import states_shape, sweep_states

            assert sweep_states(dims, cfg, kw["x"], kw["B"], kw["C"], None, state_chunk)
            states = torch.full(states_shape(dataclasses.replace(dims, chunk_size=state_chunk)), float("nan"),
                                device="cuda", dtype=torch.bfloat16)
            y2, _, _, compiled = launch(dims, **kw, config=cfg, states=states, state_chunk=state_chunk)
            assert _on_gluon(compiled) and torch.equal(y2, y)
            got.append(states)
        outs.append(got)
    # TMA True (the default): only the launches that store states
    monkeypatch.setattr(forward_gluon, "TMA", True)
    assert forward_gluon.tma_descriptors(dims, kw["x"], kw["B"], kw["C"], kw.get("z"), kw.get("D"), False) is None
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=chunk, dt_limit=limit)
    assert_close(outs[1][0], y_ref, dtype, "y")
    assert rel_err(outs[1][1], h_ref) < TOLERANCES[dtype], "final_states"
    for a, b, name in zip(outs[0], outs[1], ["y", "final states", "y before the gate or the stored states"]):
        assert torch.equal(a, b), f"{name}: TMA and cp.async differ"


GLUON_PDL_CASES = [  # batch, seqlen, nheads, headdim, dstate, ngroups, chunk, options, packed lengths
    (8, 4096, 80, 64, 128, 1, 256, "none", None),     # the bench's 8 x 4K: late publish, many waves
    (1, 20000, 80, 64, 128, 1, 256, "layer", None),   # batch 1: early publish, spans of several chunks
    (2, 1000, 6, 128, 64, 3, 128, "all", None),       # z (y moved in fp32), two headdim blocks, grouped B/C
    (1, None, 8, 64, 128, 2, 256, "layer", (700, 1, 3000, 257)),  # packed sequences
]


@pytest.mark.gpu
@pytest.mark.parametrize("case", GLUON_PDL_CASES, ids=[f"{c[0]}x{c[1] or sum(c[8])}-h{c[2]}p{c[3]}n{c[4]}-{c[7]}"
                                                      for c in GLUON_PDL_CASES])
def test_gpu_gluon_pdl(case, monkeypatch):
    """forward_gluon.PDL: the sweep may start while the preparation launch runs and reads its dt and cumsums only
    after waiting for its end. Through the public path (a prepared replay from the second call), two sets of inputs
    alternating call after call, so that a read of the decays' buffer before this call's launch has written it would
    find the other set's: every call the same bits as without PDL, and y against float64. With the states the
    training forward stores (its TMA form) too."""
    from flashssm.ops.ssd import forward_gluon
    from flashssm.ops.ssd.forward import states_shape, sweep_states

    batch, seqlen, nheads, headdim, dstate, ngroups, chunk, opts, lengths = case
    extra = dict(none={}, layer=dict(D="h", dt_bias=True, dt_softplus=True),
                 all=dict(D="hp", z=True, dt_bias=True, dt_softplus=True, initial_states=True))[opts]
    if lengths is not None:
        seqlen = sum(lengths)
        extra = dict(extra, num_seqs=len(lengths))
    sets = [ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, dtype=torch.bfloat16, device="cuda", **extra)
            for _ in range(2)]
    cu = None
    if lengths is not None:
        cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device="cuda")
        for kw in sets:
            kw["cu_seqlens"] = cu
    dims = check_ssd_scan(**sets[0], chunk_size=chunk)
    assert forward_gluon.blocker(dims, sets[0]["x"], sets[0]["B"], sets[0]["C"], sets[0].get("z"), output=True,
                                 stores_states=False, capability=torch.cuda.get_device_capability()) is None
    runs = {}
    for pdl in (False, True):
        monkeypatch.setattr(forward_gluon, "PDL", pdl)
        runs[pdl] = [flashssm.ssd_scan(**sets[i % 2], chunk_size=chunk, return_final_states=True)
                     for i in range(12)]
    for i, (plain, early) in enumerate(zip(runs[False], runs[True])):
        for a, b, name in zip(plain, early, ["y", "final states"]):
            assert torch.equal(a, b), f"call {i}: {name} with PDL differ"
    y_ref, _ = ref.ssd_scan_chunked(**to_float64(sets[1]), chunk_size=chunk)
    assert_close(runs[True][-1][0], y_ref, torch.bfloat16, "y")
    if opts == "all" or lengths is not None:
        return
    # the training forward: its states stored (by TMA where it publishes late), the same bits
    kw = sets[0]
    base = pick_config(dims, torch.bfloat16, kw["x"].device)
    if not sweep_states(dims, base, kw["x"], kw["B"], kw["C"], None, chunk):
        return  # (a training forward that stores no states here: the backward's sweeps recompute them)
    got = []
    for pdl in (False, True):
        monkeypatch.setattr(forward_gluon, "PDL", pdl)
        states = torch.full(states_shape(dims), float("nan"), device="cuda", dtype=torch.bfloat16)
        y, _, _, compiled = launch(dims, **kw, config=base, states=states, state_chunk=chunk)
        assert _on_gluon(compiled)
        got.append((y, states))
    assert torch.equal(got[0][0], got[1][0]) and torch.equal(got[0][1], got[1][1]), "stored states with PDL differ"


GLUON_PIECES_CASES = [  # batch, seqlen, nheads, headdim, dstate, ngroups, chunk, group; slots; dtype
    (3, 1024, 4, 128, 64, 2, 256, 2, 7, torch.bfloat16),    # two headdim blocks, dstate 64, grouped B/C
    (4, 4096, 8, 64, 128, 1, 256, 8, 5, torch.bfloat16),    # chains of 16 chunks, 102-103 a slot
    (2, 320, 6, 64, 128, 3, 64, 1, 5, torch.float16),       # fp16's scaled operands; chains of 5 chunks of 64
    (3, 704, 4, 64, 128, 1, 256, 2, 5, torch.bfloat16),     # a short last chunk (192 tokens)
    (8, 512, 80, 64, 128, 1, 256, 2, None, torch.bfloat16),  # every slot of the GPU: 640 chains
]


@pytest.mark.gpu
@pytest.mark.parametrize("opts", ["none", "states"])
@pytest.mark.parametrize("case", GLUON_PIECES_CASES, ids=[f"{ssd_id(*c[:6])}-Q{c[6]}-G{c[7]}-S{c[8]}-{str(c[9])[6:]}"
                                                          for c in GLUON_PIECES_CASES])
def test_gpu_gluon_pieces_same_bits(case, opts, monkeypatch):
    """forward_gluon.PIECES: the late publish by a program a slot, each sweeping its share of the chains in pieces
    (`forward.balanced_pieces`' plan, from the ticket) in place of a program a span in waves. With fp32 states (the
    hand-over exact wherever a chain is cut) y, the final states and the states stored for the tiles backward are the
    same bits as the waves' (both by TMA), and against float64; with bf16 states within their tolerance."""
    from flashssm.ops.ssd import forward_gluon
    from flashssm.ops.ssd.forward import pieces_blocker, states_shape, sweep_states

    batch, seqlen, nheads, headdim, dstate, ngroups, chunk, group, slots, dtype = case
    extra = dict(none={}, states=dict(D="h", dt_bias=True, dt_softplus=True, initial_states=True))[opts]
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, dtype=dtype, device="cuda", **extra)
    dims = check_ssd_scan(**kw, chunk_size=chunk)
    base = pick_config(dims, dtype, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, False, group=group, prefetch=True,
                       pre_decays=True)
    monkeypatch.setattr(forward_gluon, "TMA", "always")
    monkeypatch.setattr(forward_gluon, "PIECES_SLOTS", slots)
    stores = opts == "states" and dtype == torch.bfloat16  # (as a training forward stores them)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=chunk)
    for state_dtype in (torch.float32, torch.bfloat16):
        outs = []
        for pieces in (False, True, "batch"):  # (the waves; the pieces, chains in order or batch rows first)
            monkeypatch.setattr(forward_gluon, "PIECES", pieces)
            states = None
            if stores:
                assert sweep_states(dims, cfg, kw["x"], kw["B"], kw["C"], None, chunk)
                states = torch.full(states_shape(dims), float("nan"), device="cuda", dtype=torch.bfloat16)
            why = pieces_blocker(dims, cfg, kw["x"], kw["B"], kw["C"], None, kw.get("D"), states)
            assert (why is None) == bool(pieces), why
            y, h, _, compiled = launch(dims, **kw, return_final_states=True, config=cfg, state_dtype=state_dtype,
                                       states=states, state_chunk=chunk if stores else None)
            assert _on_gluon(compiled)
            outs.append([y, h] + ([states] if stores else []))
        for got in outs[1:]:
            assert_close(got[0], y_ref, dtype, "y")
            assert rel_err(got[1].double(), h_ref) < TOLERANCES[dtype if state_dtype == torch.float32 else
                                                                state_dtype], "final_states"
            if stores:
                assert not got[2].isnan().any(), "a stored state left unwritten"
            if state_dtype == torch.float32:
                for a, b, name in zip(outs[0], got, ["y", "final states", "stored states"]):
                    assert torch.equal(a, b), f"{name}: the pieces and the waves differ"


GLUON_SPAN_CASES = [  # batch, seqlen, nheads, headdim, dstate, ngroups, chunk, gluon_group (chunks a program)
    (1, 9000, 2, 64, 128, 1, 256, 13),  # spans of 13, 13 and 10 chunks (a ragged last one); CHUNK 16 chunks
    (2, 777, 6, 128, 64, 3, 128, 3),    # two headdim blocks, dstate 64, grouped B/C; CHUNK 4 chunks
    (3, 1000, 4, 64, 128, 1, 64, 5),    # spans of 320 tokens in a CHUNK of 512
]


@pytest.mark.gpu
@pytest.mark.parametrize("opts", ["none", "all"])
@pytest.mark.parametrize("case", GLUON_SPAN_CASES, ids=[f"{ssd_id(*c[:6])}-Q{c[6]}-S{c[7]}" for c in GLUON_SPAN_CASES])
def test_gpu_gluon_run_time_span(case, opts):
    """The Gluon kernel's early publish with its span a run-time value (`gluon_group`; CHUNK its power-of-two
    ceiling): the same bits as the kernel whose span of the same chunks is the constexpr, and y and the final states
    against float64."""
    from flashssm.ops.ssd import forward

    batch, seqlen, nheads, headdim, dstate, ngroups, chunk, group = case
    extra = {} if opts == "none" else dict(D="hp", z=True, dt_bias=True, dt_softplus=True, initial_states=True)
    state_dtype = torch.float32 if opts == "none" else torch.float16
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, dtype=torch.bfloat16, device="cuda", **extra)
    dims = check_ssd_scan(**kw, chunk_size=chunk)
    base = pick_config(dims, torch.bfloat16, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, True, pre_decays=True,
                       gluon_group=group)
    span, ceiling = forward.gluon_span(dims, cfg, kw["x"])
    assert (span, ceiling) == (chunk * group, chunk * forward._runtime.next_power_of_2(group))
    y, h, ypre, compiled = launch(dims, **kw, return_final_states=True, config=cfg, state_dtype=state_dtype,
                                  store_ypre=True)
    assert _on_gluon(compiled)
    fixed = dataclasses.replace(cfg, group=group, gluon_group=None)
    y_c, h_c, ypre_c, _ = launch(dims, **kw, return_final_states=True, config=fixed, state_dtype=state_dtype,
                                 store_ypre=True)
    assert torch.equal(y, y_c) and torch.equal(h, h_c), "the run-time span's bits differ from the constexpr's"
    if "z" in kw:
        assert torch.equal(ypre, ypre_c)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=chunk)
    assert_close(y, y_ref, torch.bfloat16, "y")
    assert rel_err(h, h_ref) < max(TOLERANCES[torch.bfloat16], TOLERANCES[state_dtype]), "final_states"


GLUON_TAILS_CASES = [  # batch, seqlen, nheads, headdim, dstate, ngroups, chunk, chunks a span, last spans a program
    (1, 9000, 2, 64, 128, 1, 256, 13, 1),  # last spans of 2344 tokens (a ragged sub-chunk), a program each
    (2, 777, 6, 128, 64, 3, 128, 3, 5),    # 24 chains (two headdim blocks, grouped B/C), last spans of 9 tokens,
                                           # five a program (the last program four)
    (3, 1000, 4, 64, 128, 1, 64, 5, 3),    # 12 chains, last spans of 40 tokens, three a program
    (1, 40000, 4, 64, 128, 1, 256, 40, 4),  # 157 chunks: three spans of 40 and a last one of 37, four a program
]


@pytest.mark.gpu
@pytest.mark.parametrize("opts", ["none", "all", "states"])
@pytest.mark.parametrize("case", GLUON_TAILS_CASES, ids=[f"{ssd_id(*c[:6])}-Q{c[6]}-S{c[7]}-T{c[8]}"
                                                         for c in GLUON_TAILS_CASES])
def test_gpu_gluon_tails(case, opts):
    """The Gluon kernel's early publish with the chains' last spans gathered, a few a program, in the late form
    (`LaunchConfig.gluon_tails`, TAILS): y, y before the gate and the stored states the same bits as the launch of the
    same spans with a program a span (the output sweep is the same, from the same entering state), the final states
    (the late form's running state, not the early form's own state handed on) within rounding of it, and both against
    float64; the flags left clean (a second launch gives the same bits)."""
    from flashssm.ops.ssd import forward

    batch, seqlen, nheads, headdim, dstate, ngroups, chunk, group, tails = case
    if seqlen == 40000:  # (chunks 157: spans of 40, the last 37)
        assert -(-seqlen // chunk) - 3 * group == 37
    extra = {} if opts != "all" else dict(D="hp", z=True, dt_bias=True, dt_softplus=True, initial_states=True)
    state_dtype = torch.float16 if opts == "all" else torch.float32
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, dtype=torch.bfloat16, device="cuda", **extra)
    dims = check_ssd_scan(**kw, chunk_size=chunk)
    base = pick_config(dims, torch.bfloat16, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, True, pre_decays=True,
                       gluon_group=group, gluon_tails=tails)
    span, ceiling = forward.gluon_span(dims, cfg, kw["x"])
    assert forward.gluon_tails(dims, cfg, span, ceiling) == tails
    even = dataclasses.replace(cfg, gluon_tails=None)
    common = dict(return_final_states=True, state_dtype=state_dtype, store_ypre="z" in kw)
    if opts == "states":
        state_chunk = chunk
        shape = forward.states_shape(dataclasses.replace(dims, chunk_size=state_chunk))
        states = [forward.new_states(shape, torch.bfloat16, "cuda").fill_(float("nan")) for _ in range(2)]
        assert forward.sweep_states(dims, cfg, kw["x"], kw["B"], kw["C"], None, state_chunk)
        common_s = [dict(states=st, state_chunk=state_chunk) for st in states]
    else:
        common_s = [{}, {}]
    y, h, ypre, compiled = launch(dims, **kw, config=cfg, **common, **common_s[0])
    assert _on_gluon(compiled)
    y_e, h_e, ypre_e, _ = launch(dims, **kw, config=even, **common, **common_s[1])
    assert torch.equal(y, y_e), "the gathered last spans' y differs from a program a span's"
    if "z" in kw:
        assert torch.equal(ypre, ypre_e)
    if opts == "states":
        assert not states[0].isnan().any(), "a stored state left unwritten"
        assert torch.equal(states[0], states[1]), "the stored states differ"
    assert rel_err(h, h_e) < TOLERANCES[state_dtype], "final states: the late form against the early form's"
    y2, h2, _, _ = launch(dims, **kw, config=cfg, **common, **common_s[0])
    assert torch.equal(y, y2) and torch.equal(h, h2), "a second launch differs (a flag left set?)"
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=chunk)
    assert_close(y, y_ref, torch.bfloat16, "y")
    assert rel_err(h, h_ref) < max(TOLERANCES[torch.bfloat16], TOLERANCES[state_dtype]), "final_states"


GLUON_STATES_CASES = [  # batch, seqlen, nheads, headdim, dstate, chunk, chunks a program, run-time span, early,
    # state chunk
    (2, 1500, 4, 64, 128, 256, 2, False, False, 128),  # late spans of 512 tokens, states every 128 (8x4K's form)
    (1, 3000, 4, 128, 64, 256, 3, True, True, 256),     # early, a run-time span of 3 chunks, two headdim blocks
    (3, 700, 2, 64, 128, 128, 1, False, True, 64),      # early, a program a chunk, states every sub-chunk
]


@pytest.mark.parametrize("form", ["sweep-late", "sweep-early", "recompute-late", "recompute-early",
                                  "recompute-carry"])
def test_scaled_states(form, device):
    """fp16 inputs' states for the tiles backward, scaled (`forward.new_states`: fp16 over a power of two a (chunk,
    head) tile, the units at the buffer's tail), stored by the Triton kernel's output sweep (late and early publish)
    and by the recompute (late, early, and in place over scaled gradients with the carry <dH, H>): against the fp32
    recompute, within a few of fp16's roundings of each tile's largest value (the kernels' 16-bit products round
    differently), with every dt near 0 (the states ~1e-7, fp16 subnormals, which a plain fp16 copy keeps to a bit or
    two: checked to fail that bound). A NaN and an inf in the initial state stay in their elements
    (they do not set the tile's unit), the rest of that tile keeping its digits. The launch refuses a scaled buffer
    of the wrong size, for non-fp16 inputs, and without an output sweep's state_chunk."""
    from flashssm.ops.ssd.forward import entering_states, new_states, states_shape, states_units, unscaled_states

    batch, seqlen, chunk, state_chunk = 2, 150, 64, 32
    kw = ssd_inputs(batch, seqlen, 3, 32, 16, 1, dtype=torch.float16, device=device, dt_softplus=True,
                    initial_states=True)
    kw["dt"] = torch.full_like(kw["dt"], -16.0) + torch.rand_like(kw["dt"])  # softplus: dt ~ 1e-7
    init = kw["initial_states"]
    init.mul_(1e-7)
    init[0, 1, 3, 5], init[1, 2, 7, 0] = float("nan"), float("inf")
    dims = check_ssd_scan(**{k: v for k, v in kw.items() if k != "dt_softplus"}, chunk_size=chunk)
    sdims = dataclasses.replace(dims, chunk_size=state_chunk)
    shape = states_shape(sdims)
    common = dict(dt_softplus=True, initial_states=init)
    want = unscaled_states(entering_states(sdims, kw["x"], kw["dt"], kw["A"], kw["B"], late_states=False,
                                           **common), shape)
    if form.startswith("sweep"):
        early = form == "sweep-early"
        cfg = dataclasses.replace(pick_config(dims, torch.float16, kw["x"].device), early_publish=early,
                                  group=1 if early else 2, sub=16, gluon_group=None, gluon=False)
        states = new_states(shape, torch.float16, device, scaled=True).fill_(float("nan"))
        launch(dims, **kw, config=cfg, states=states, state_chunk=state_chunk)
        for bad, match in ((states[:-2], "contiguous"), (states.float(), "contiguous")):
            with pytest.raises(ValueError, match=match):
                launch(dims, **kw, config=cfg, states=bad, state_chunk=state_chunk)
        with pytest.raises(ValueError, match="output sweep"):
            launch(dims, **kw, config=cfg, states=states)
        with pytest.raises(ValueError, match="fp16 inputs"):
            launch(dims, **{**kw, "x": kw["x"].float(), "B": kw["B"].float(), "C": kw["C"].float()}, config=cfg,
                   states=states, state_chunk=state_chunk)
    else:
        late = form != "recompute-early"
        out = carry = None
        if form == "recompute-carry":  # scaled gradients in the buffer first, as the chain launch leaves them
            dH = torch.randn(shape, device=device) * 1e-3
            out = new_states(shape, torch.float16, device, scaled=True)
            units = states_units(out, shape[2] * shape[3]).view(shape[:2])
            units.copy_(2.0 ** torch.randint(-12, -8, shape[:2], device=device).float())
            out[:math.prod(shape)].view(shape).copy_((dH / units[:, :, None, None]).half())
            dH = unscaled_states(out, shape)
            carry = torch.full(shape[:2], float("nan"), device=device)
        states = entering_states(sdims, kw["x"], kw["dt"], kw["A"], kw["B"], late_states=late,
                                 group=3 if late else None, store_dtype=torch.float16, scaled=True, out=out,
                                 carry=carry, **common)
        if carry is not None:
            finite = want.isfinite().all(3).all(2)
            assert rel_err(carry[finite], (dH * want).sum((2, 3))[finite]) < 2e-3, "carry"
    got = unscaled_states(states, shape)
    assert not states[:math.prod(shape)].isnan().all(), "nothing stored"
    assert got[0, 1, 5, 3].isnan() and got[batch + 1, 2, 0, 7].isinf(), "a NaN or an inf moved or vanished"
    finite = want.isfinite()
    assert torch.equal(finite, got.isfinite()), "non-finite states elsewhere"
    tiles = want.isfinite().all(3).all(2)  # (the tiles with a NaN or an inf: their other elements)
    for r, hh in [(0, 1), (batch + 1, 2)] + [tuple(i) for i in tiles.nonzero().tolist()[:40]]:
        w, g = want[r, hh], got[r, hh]
        ok = w.isfinite()
        # each element within four of fp16's half units of the tile's largest finite value
        assert ((g[ok] - w[ok]).abs() <= w[ok].abs().max() * 2.0 ** -9 + 1e-30).all(), (r, hh)
    if form == "sweep-late":  # a plain fp16 copy of the same states: subnormal, off by more than that bound
        plain = want.half().float()
        worst = max((plain[r, hh] - want[r, hh]).abs().max() / want[r, hh].abs().max()
                    for r, hh in tiles.nonzero().tolist())
        assert worst > 2.0 ** -7, worst


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("case", GLUON_STATES_CASES, ids=["late-spans", "early-run-time-span", "early-a-chunk"])
def test_gpu_gluon_sweep_states(case, dtype):
    """The Gluon kernel's stored states (`launch(states=, state_chunk=)`: the running state as the sweep holds it in
    shared memory, 16 bits; fp16: over its unit there, which is stored beside it, a scaled buffer as the tiles keep
    it): every row written, within rounding of the recompute's, and y the same bits as without storing. fp16 with two
    headdim blocks cannot store them (one unit a tile)."""
    batch, seqlen, nheads, headdim, dstate, chunk, group, given, early, state_chunk = case
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, 1, dtype=dtype, device="cuda", D="h",
                    dt_softplus=True, initial_states=True)
    dims = check_ssd_scan(**kw, chunk_size=chunk)
    base = pick_config(dims, dtype, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, early, pre_decays=True,
                       group=1 if given else group, gluon_group=group if given else None, prefetch=not early)
    from flashssm.ops.ssd import backward_chain

    from flashssm.ops.ssd.forward import sweep_states

    store = backward_chain.tiles_states_dtype(dtype, None, backward_chain.TILES_MODE)  # what the training call asks
    scaled = backward_chain.scaled_states(dtype, backward_chain.TILES_MODE)
    assert store == dtype and scaled == (dtype == torch.float16)
    if scaled and headdim > 64:
        assert not sweep_states(dims, cfg, kw["x"], kw["B"], kw["C"], None, state_chunk)
        return
    _check_swept_states(dims, kw, cfg, state_chunk, store, dict(dt_softplus=True, initial_states=kw["initial_states"]),
                        TOLERANCES[dtype], gluon=True, scaled=scaled)


GLUON_PACKED_CASES = [  # sequence lengths, nheads, headdim, dstate, ngroups, chunk, group (chunks a program)
    ([1, 700, 256, 257, 1, 1500], 4, 64, 128, 2, 256, 2),  # one-token sequences, ragged last spans, a span's edge
    ([333, 64, 1000, 65], 6, 128, 64, 3, 128, 3),          # two headdim blocks, dstate 64, grouped B/C
    ([4096, 4096, 4096], 8, 64, 128, 1, 256, 8),           # 8x4K's spans of 2048 tokens, chunk-aligned
]


@pytest.mark.gpu
@pytest.mark.parametrize("early", [False, True], ids=["late", "early"])
@pytest.mark.parametrize("opts", ["none", "all"])
@pytest.mark.parametrize("case", GLUON_PACKED_CASES, ids=["ragged", "grouped", "aligned"])
def test_gpu_gluon_packed(case, opts, early):
    """The Gluon kernel on packed sequences (`cu_seqlens`, its spans from the Triton kernel's table), late and early
    publish: y, y before the gate and one final state per sequence against float64 and against the Triton kernel on
    the same launch; every sequence alone gives its part of y (nothing crosses a boundary); two runs, the same bits."""
    lengths, nheads, headdim, dstate, ngroups, chunk, group = case
    extra = {} if opts == "none" else dict(D="hp", z=True, dt_bias=True, dt_softplus=True, initial_states=True)
    state_dtype = torch.float32 if opts == "none" else torch.float16
    kw = ssd_inputs(1, sum(lengths), nheads, headdim, dstate, ngroups, dtype=torch.bfloat16, device="cuda",
                    num_seqs=len(lengths), **extra)
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device="cuda")
    limit = (1e-3, 0.5) if opts == "all" else (0.0, float("inf"))
    dims = check_ssd_scan(**kw, chunk_size=chunk, dt_limit=limit, cu_seqlens=cu)
    cfg, y, h = _gluon_against_triton(dims, kw, early, group, state_dtype, limit, cu)
    for s, (start, end) in enumerate(zip(cu.tolist(), cu.tolist()[1:])):  # each sequence on its own
        alone = {k: (v[:, start:end] if k in ("x", "dt", "B", "C", "z") else v) for k, v in kw.items()}
        if "initial_states" in kw:
            alone["initial_states"] = kw["initial_states"][s:s + 1]
        y1 = flashssm.ssd_scan(**alone, chunk_size=chunk, dt_limit=limit)
        assert (y[:, start:end].float() - y1.float()).abs().max() <= 1e-2 * y1.float().abs().max() + 1e-6, s
    y2, h2, _, _ = launch(dims, **kw, return_final_states=True, config=cfg, state_dtype=state_dtype, store_ypre=True)
    assert torch.equal(y, y2) and torch.equal(h, h2), "two runs differ"


@pytest.mark.gpu
def test_gpu_gluon_packed_public_path_and_nan():
    """flashssm.ssd_scan on packed sequences takes the Gluon kernel (its blocker passes), with the offsets on the GPU
    read once (a second call does not read them again), and a NaN in one sequence stays in it: the head's headdim
    column from that token to the sequence's end, nothing in the other sequences."""
    from flashssm.ops import checks
    from flashssm.ops.ssd import forward

    lengths = [3000, 1200, 5000, 700, 2000, 2600, 4100, 3000]
    kw = ssd_inputs(1, sum(lengths), 80, 64, 128, 1, dtype=torch.bfloat16, device="cuda", D="h", dt_softplus=True)
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device="cuda", dtype=torch.int32)
    dims = check_ssd_scan(**kw, chunk_size=256, cu_seqlens=cu)
    assert forward.gluon_blocker(dims, kw["x"], kw["B"], kw["C"], None) is None
    assert checks._HOST_VALUES[id(cu)][2] == dims.cu_seqlens
    y = flashssm.ssd_scan(**kw, chunk_size=256, cu_seqlens=cu)
    y_ref, _ = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=256, cu_seqlens=cu)
    assert_close(y, y_ref, torch.bfloat16, "y")
    start, end = 3000 + 1200, 3000 + 1200 + 5000  # the third sequence, NaN at its 101st token
    kw["x"][0, start + 100, 7, 5] = float("nan")
    y = flashssm.ssd_scan(**kw, chunk_size=256, cu_seqlens=cu)
    assert torch.isnan(y[0, start + 100:end, 7, 5]).all()
    where = torch.zeros_like(y, dtype=torch.bool)
    where[0, start + 64:end, 7, 5] = True  # (inside the token's sub-chunk of 64, from the sequence's start, the
    # masked product's 0 * NaN reaches the earlier tokens too)
    assert not (torch.isnan(y) & ~where).any()


@pytest.mark.gpu
@pytest.mark.parametrize("early", [False, True], ids=["late", "early"])
def test_gpu_gluon_sweep_states_packed(early):
    """The Gluon kernel's stored states on packed sequences: spans of 3 chunks of 256 store the state entering every
    chunk of 128 at its row of the chunk table (`varlen_state_rows`: position-major, longest sequences first, ragged
    ends); every row written, within bf16 rounding of the recompute's, y the same bits as without storing."""
    lengths = [700, 1, 1600, 129, 640, 2000]
    kw = ssd_inputs(1, sum(lengths), 4, 64, 128, 1, dtype=torch.bfloat16, device="cuda", D="h", dt_softplus=True,
                    initial_states=True, num_seqs=len(lengths))
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device="cuda")
    dims = check_ssd_scan(**kw, chunk_size=256, cu_seqlens=cu)
    base = pick_config(dims, torch.bfloat16, kw["x"].device)
    cfg = LaunchConfig(base.sub, base.block_p, base.num_warps, base.num_stages, early, pre_decays=True, group=3,
                       prefetch=not early)
    _check_swept_states(dims, kw, cfg, 128, torch.bfloat16,
                        dict(dt_softplus=True, initial_states=kw["initial_states"]), TOLERANCES[torch.bfloat16],
                        gluon=True)


def test_varlen_state_rows():
    """Each span row's chunks map to the rows of the chunk table holding the same sequence's chunk (the same first
    token), -1 past the sequence's end, for ragged packings, one-token and empty sequences and spans of 1 to 4 chunks."""
    from flashssm.ops.ssd.forward import varlen_state_rows, varlen_table

    for lengths, q, per in (([700, 1, 1600, 129, 640, 2000], 128, 3), ([5, 0, 300, 64], 32, 4), ([1000], 64, 1)):
        x = torch.zeros(1, sum(lengths), 2, 8)
        dims = check_ssd_scan(x, x[..., 0], torch.zeros(2), x[..., :1, :4], x[..., :1, :4], chunk_size=q,
                              cu_seqlens=torch.tensor([0] + list(itertools.accumulate(lengths))))
        chunks = varlen_table(dims, x.device)[0].tolist()
        spans = varlen_table(dims, x.device, q * per)[0].tolist()
        rows = varlen_state_rows(dims, q * per, q, x.device).tolist()
        assert len(rows) == len(spans) and all(len(r) == per for r in rows)
        seen = []
        for (seq, k, start, length, _, _), span_rows in zip(spans, rows):
            for j, r in enumerate(span_rows):
                if j * q >= max(length, 1):
                    assert r == -1, (lengths, seq, k, j)
                    continue
                assert chunks[r][0] == seq and chunks[r][1] == k * per + j and chunks[r][2] == start + j * q
                seen.append(r)
        assert sorted(seen) == list(range(len(chunks))), "every chunk row once"


@pytest.mark.gpu
def test_gpu_gluon_public_path_early():
    """flashssm.ssd_scan takes the Gluon kernel with an early publish where chains are few (one sequence x 80 heads,
    spans of several chunks handing states along): y and the final states against float64, NaN where the Triton
    kernel puts it."""
    from flashssm.ops.ssd import forward

    kw = ssd_inputs(1, 5000, 80, 64, 128, 1, dtype=torch.bfloat16, device="cuda", D="h", dt_softplus=True,
                    initial_states=True)
    dims = check_ssd_scan(**kw, chunk_size=256)
    cfg = pick_config(dims, torch.bfloat16, kw["x"].device)
    assert cfg.early_publish and forward.gluon_blocker(dims, kw["x"], kw["B"], kw["C"], None) is None
    if forward._runtime.sm_count(kw["x"].device, on_cpu=0) == 132:  # H100 SXM, H200: one wave of spans of 7, 7 and 6 chunks
        assert forward.gluon_span(dims, cfg, kw["x"]) == (7 * 256, 8 * 256)
    y, h = flashssm.ssd_scan(**kw, chunk_size=256, return_final_states=True)
    y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=256)
    assert_close(y, y_ref, torch.bfloat16, "y")
    assert rel_err(h, h_ref) < TOLERANCES[torch.bfloat16], "final_states"
    kw["x"][0, 1000, 7, 5] = float("nan")
    y = flashssm.ssd_scan(**kw, chunk_size=256)
    y_t = launch(dims, **kw, config=dataclasses.replace(cfg, gluon=False))[0]
    assert torch.equal(torch.isnan(y), torch.isnan(y_t))
    assert torch.isnan(y[0, 1000:, 7, 5]).all() and not torch.isnan(y[0, :960]).any()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_gpu_gluon_public_path_and_nan(dtype):
    """flashssm.ssd_scan takes the Gluon kernel where chains are many (8 x 80 heads), and a NaN in one element of x
    makes NaN of that head's headdim column from the token on, in the same places as the Triton kernel, and nowhere
    before the token's sub-chunk of 64 (inside it the masked product's 0 * NaN reaches the earlier tokens too). fp16
    too: its units come from the largest magnitudes, which pass over a NaN, so the NaN stays where it is."""
    from flashssm.ops.ssd import forward

    kw = ssd_inputs(8, 700, 80, 64, 128, 1, dtype=dtype, device="cuda", D="h", dt_softplus=True)
    dims = check_ssd_scan(**kw, chunk_size=256)
    cfg = pick_config(dims, dtype, kw["x"].device)
    assert not cfg.early_publish and forward.gluon_blocker(dims, kw["x"], kw["B"], kw["C"], None) is None
    y = flashssm.ssd_scan(**kw, chunk_size=256)
    y_ref, _ = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=256)
    assert_close(y, y_ref, dtype, "y")
    kw["x"][3, 400, 7, 5] = float("nan")
    y = flashssm.ssd_scan(**kw, chunk_size=256)
    y_t = launch(dims, **kw, config=dataclasses.replace(cfg, gluon=False))[0]
    assert torch.equal(torch.isnan(y), torch.isnan(y_t))
    assert torch.isnan(y[3, 400:, 7, 5]).all()
    where = torch.zeros_like(y, dtype=torch.bool)
    where[3, 384:, 7, 5] = True
    assert not (torch.isnan(y) & ~where).any()
