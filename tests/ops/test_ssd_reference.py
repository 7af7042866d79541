"""The SSD references agree with each other and with the recurrence; the public CPU path uses them."""

import itertools
import math
import warnings

import pytest
import torch

import flashssm
from flashssm.ops.ssd import reference as ref
from tests.helpers import (SSD_OPTION_IDS, SSD_OPTION_NAMES, SSD_OPTIONS, VARLEN_IDS, VARLEN_PACKS, assert_close,
                           rel_err, ssd_id, ssd_inputs, to_float64)

GRID = [
    (batch, seqlen, 4, headdim, dstate, ngroups)
    for seqlen, batch in ((1, 2), (63, 2), (257, 2), (1000, 1))
    for headdim, dstate in ((32, 16), (64, 128))
    for ngroups in (1, 2, 4)
]


@pytest.mark.parametrize("shape", GRID, ids=[ssd_id(*s) for s in GRID])
def test_chunked_matches_sequential(shape, device):
    kw = ssd_inputs(*shape, device=device, D="hp", z=True, dt_bias=True, dt_softplus=True, initial_states=True)
    kw["dt_limit"] = (1e-3, 0.5)
    y_seq, h_seq = ref.ssd_scan_sequential(**kw)
    y_chk, h_chk = ref.ssd_scan_chunked(**kw, chunk_size=64)
    assert_close(y_chk, y_seq, torch.float64, "y")
    assert_close(h_chk, h_seq, torch.float64, "final_states")


@pytest.mark.parametrize(SSD_OPTION_NAMES, SSD_OPTIONS, ids=SSD_OPTION_IDS)
def test_every_option(D, z, dt_bias, dt_softplus, dt_limit, initial_states, device):
    kw = ssd_inputs(2, 45, 4, 8, 6, 2, device=device, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                    initial_states=initial_states)
    if dt_limit:
        kw["dt_limit"] = (0.02, 0.08)  # clamps a good share of the tokens at both ends
    y_seq, h_seq = ref.ssd_scan_sequential(**kw)
    y_chk, h_chk = ref.ssd_scan_chunked(**kw, chunk_size=16)
    assert_close(y_chk, y_seq, torch.float64, "y")
    assert_close(h_chk, h_seq, torch.float64, "final_states")


def test_recurrence_by_hand():
    """Two tokens, one head, headdim = dstate = 1, worked out on paper."""
    x = torch.tensor([1.0, 2.0], dtype=torch.float64).view(1, 2, 1, 1)
    dt = torch.tensor([0.5, 1.0], dtype=torch.float64).view(1, 2, 1)
    A = torch.tensor([-1.0])
    B = torch.ones(1, 2, 1, 1, dtype=torch.float64)
    C = torch.tensor([1.0, 2.0], dtype=torch.float64).view(1, 2, 1, 1)
    D = torch.tensor([0.5])
    h1 = 0.5 * 1.0 * 1.0
    h2 = math.exp(-1.0) * h1 + 1.0 * 2.0 * 1.0
    expected = torch.tensor([h1 * 1.0 + 0.5 * 1.0, h2 * 2.0 + 0.5 * 2.0], dtype=torch.float64).view(1, 2, 1, 1)
    for fn in (ref.ssd_scan_sequential, ref.ssd_scan_chunked):
        y, final = fn(x, dt, A, B, C, D=D)
        torch.testing.assert_close(y, expected, rtol=1e-14, atol=0)
        torch.testing.assert_close(final, torch.tensor([[[[h2]]]], dtype=torch.float64), rtol=1e-14, atol=0)


@pytest.mark.parametrize("seqlen", [1, 100, 700])
def test_chunk_size_does_not_change_result(seqlen, device):
    kw = ssd_inputs(2, seqlen, 4, 16, 8, 2, device=device, D="h", z=True, initial_states=True)
    y0, h0 = ref.ssd_scan_chunked(**kw, chunk_size=16)
    for q in (32, 64, 128, 256):
        y, h = ref.ssd_scan_chunked(**kw, chunk_size=q)
        assert_close(y, y0, torch.float64, f"y, chunk {q}")
        assert_close(h, h0, torch.float64, f"final_states, chunk {q}")


@pytest.mark.parametrize("initial_states", [False, True], ids=["zero-init", "init"])
@pytest.mark.parametrize("lengths", VARLEN_PACKS, ids=VARLEN_IDS)
def test_varlen_equals_each_sequence_alone(lengths, initial_states, device):
    total = sum(lengths)
    kw = ssd_inputs(1, total, 4, 8, 6, 2, device=device, D="h", z=True, dt_bias=True, dt_softplus=True,
                    initial_states=initial_states, num_seqs=len(lengths))
    offsets = [0] + list(itertools.accumulate(lengths))
    cu = torch.tensor(offsets, dtype=torch.int32, device=device)
    y_var, h_var = ref.ssd_scan_chunked(**kw, cu_seqlens=cu, chunk_size=16)
    y_seq, h_seq = ref.ssd_scan_sequential(**kw, cu_seqlens=cu)
    assert_close(y_var, y_seq, torch.float64, "y vs sequential")
    assert_close(h_var, h_seq, torch.float64, "final_states vs sequential")
    for s, (start, end) in enumerate(zip(offsets, offsets[1:])):
        alone = {k: (v[:, start:end] if k in ("x", "dt", "B", "C", "z") else v) for k, v in kw.items()}
        if initial_states:
            alone["initial_states"] = kw["initial_states"][s:s + 1]
        y_one, h_one = ref.ssd_scan_chunked(**alone, chunk_size=16)
        if end > start:
            assert_close(y_var[:, start:end], y_one, torch.float64, f"y of sequence {s}")
        torch.testing.assert_close(h_var[s:s + 1], h_one, rtol=1e-10, atol=1e-12)
        if end == start:  # an empty sequence hands its initial state straight through
            expected = kw["initial_states"][s] if initial_states else torch.zeros_like(h_var[s])
            torch.testing.assert_close(h_var[s], expected.double(), rtol=0, atol=0)


def test_empty_sequence_batch(device):
    kw = ssd_inputs(2, 0, 4, 8, 6, 1, device=device, initial_states=True)
    for fn in (ref.ssd_scan_sequential, ref.ssd_scan_chunked):
        y, h = fn(**kw)
        assert y.shape == (2, 0, 4, 8)
        torch.testing.assert_close(h, kw["initial_states"].double(), rtol=0, atol=0)


@pytest.mark.parametrize("state_dtype", [torch.float16, torch.bfloat16])
def test_state_dtype_rounds_states_between_chunks(state_dtype, device):
    kw = ssd_inputs(1, 96, 4, 16, 8, 1, device=device)
    y32, h32 = ref.ssd_scan_chunked(**kw, chunk_size=32)
    y16, h16 = ref.ssd_scan_chunked(**kw, chunk_size=32, state_dtype=state_dtype)
    assert h16.dtype == state_dtype
    # rounding the two hand-overs moves y by about the state dtype's precision, no more
    err = rel_err(y16, y32)
    assert 0 < err < (2e-3 if state_dtype == torch.float16 else 1.5e-2), err
    # with a single chunk nothing is handed over: y is untouched, the final state only rounded
    one = {k: (v[:, :32] if k in ("x", "dt", "B", "C") else v) for k, v in kw.items()}
    y_a, h_a = ref.ssd_scan_chunked(**one, chunk_size=32)
    y_b, h_b = ref.ssd_scan_chunked(**one, chunk_size=32, state_dtype=state_dtype)
    torch.testing.assert_close(y_b, y_a, rtol=0, atol=0)
    torch.testing.assert_close(h_b, h_a.to(state_dtype), rtol=0, atol=0)


def test_chunked_gradcheck():
    kw = ssd_inputs(1, 7, 2, 2, 3, 1, D="hp", z=True, dt_bias=True, dt_softplus=True, initial_states=True)
    kw = to_float64(kw)
    names = ["x", "dt", "A", "B", "C", "D", "z", "dt_bias", "initial_states"]
    for k in names:
        kw[k].requires_grad_(True)

    def fn(*tensors):
        args = dict(kw, **dict(zip(names, tensors)))
        y, h = ref.ssd_scan_chunked(**args, chunk_size=16)
        return y, h

    assert torch.autograd.gradcheck(fn, [kw[k] for k in names])


def test_chunked_gradients_match_sequential(device):
    lengths = [3, 20, 1, 9]
    kw = to_float64(ssd_inputs(1, sum(lengths), 4, 4, 5, 2, device=device, D="h", z=True, dt_bias=True,
                               dt_softplus=True, initial_states=True, num_seqs=len(lengths)))
    kw["dt_limit"] = (0.01, 0.2)
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device=device)
    names = ["x", "dt", "A", "B", "C", "D", "z", "dt_bias", "initial_states"]
    grads = []
    for fn, extra in ((ref.ssd_scan_sequential, {}), (ref.ssd_scan_chunked, {"chunk_size": 16})):
        leaves = {k: kw[k].detach().clone().requires_grad_(True) for k in names}
        y, h = fn(**dict(kw, **leaves), cu_seqlens=cu, **extra)
        torch.manual_seed(1)
        ((y * torch.randn_like(y)).sum() + (h * torch.randn_like(h)).sum()).backward()
        grads.append({k: v.grad for k, v in leaves.items()})
    for k in names:
        assert_close(grads[1][k], grads[0][k], torch.float64, f"d{k}")


def _step_through(kw, state):
    ys = []
    for t in range(kw["x"].shape[1]):
        step_kw = {k: (v[:, t] if k in ("x", "dt", "B", "C", "z") else v) for k, v in kw.items()
                   if k not in ("initial_states",)}
        ys.append(ref.ssd_step_reference(state, **step_kw))
    return torch.stack(ys, dim=1)


@pytest.mark.parametrize("ngroups", [1, 2, 4])
def test_step_matches_scan(ngroups, device):
    kw = ssd_inputs(3, 25, 4, 8, 6, ngroups, device=device, D="hp", z=True, dt_bias=True, dt_softplus=True,
                    initial_states=True)
    kw["dt_limit"] = (0.01, 0.3)
    y_scan, h_scan = ref.ssd_scan_sequential(**kw)
    state = kw["initial_states"].double().clone()
    y_steps = _step_through(kw, state)
    assert_close(y_steps, y_scan, torch.float64, "y")
    assert_close(state, h_scan, torch.float64, "state")


def test_step_state_batch_indices(device):
    kw = ssd_inputs(3, 1, 4, 8, 6, 2, device=device, D="h", z=True)
    step = {k: v[:, 0] if k in ("x", "dt", "B", "C", "z") else v for k, v in kw.items()}
    cache = torch.randn(6, 4, 8, 6, dtype=torch.float64, device=device)
    before = cache.clone()
    idx = torch.tensor([4, -1, 1], device=device)
    y = ref.ssd_step_reference(cache, **step, state_batch_indices=idx)
    # the same rows, stepped on their own
    own = before[[4, 1]].clone()
    live = {k: (v[[0, 2]] if k in ("x", "dt", "B", "C", "z") else v) for k, v in step.items()}
    y_own = ref.ssd_step_reference(own, **live)
    torch.testing.assert_close(cache[[4, 1]], own, rtol=0, atol=0)
    torch.testing.assert_close(y[[0, 2]], y_own, rtol=0, atol=0)
    assert (y[1] == 0).all(), "a padding row's y is zero"
    untouched = [0, 2, 3, 5]
    torch.testing.assert_close(cache[untouched], before[untouched], rtol=0, atol=0)


@pytest.mark.parametrize("state_dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_step_low_precision_state(state_dtype, device):
    kw = ssd_inputs(2, 12, 4, 8, 6, 2, dtype=torch.float32, device=device, D="h", initial_states=True)
    y_ref, h_ref = ref.ssd_scan_sequential(**to_float64(kw))
    state = kw["initial_states"].to(state_dtype).clone()
    y = _step_through(kw, state)
    assert state.dtype == state_dtype
    assert_close(y, y_ref, state_dtype if state_dtype != torch.float32 else torch.float32, "y")
    assert_close(state, h_ref, state_dtype if state_dtype != torch.float32 else torch.float32, "state")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("state_dtype", [None, torch.float16])
def test_public_ssd_scan(dtype, state_dtype, device):
    kw = ssd_inputs(2, 150, 4, 16, 8, 2, dtype=dtype, device=device, D="h", z=True, dt_bias=True,
                    dt_softplus=True, initial_states=True)
    y_ref, h_ref = ref.ssd_scan_sequential(**to_float64(kw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the CUDA reference fallback says so, once
        y, h = flashssm.ssd_scan(**kw, chunk_size=64, return_final_states=True, state_dtype=state_dtype)
        y_only = flashssm.ssd_scan(**kw, chunk_size=64, state_dtype=state_dtype)
    assert y.dtype == dtype and h.dtype == (state_dtype or torch.float32)
    assert_close(y, y_ref, dtype, "y")
    assert_close(h, h_ref, state_dtype or dtype, "final_states")
    torch.testing.assert_close(y_only, y, rtol=0, atol=0)


def test_public_ssd_step(device):
    kw = ssd_inputs(2, 1, 4, 8, 6, 2, dtype=torch.float32, device=device, D="h", z=True, initial_states=True)
    step = {k: v[:, 0] if k in ("x", "dt", "B", "C", "z") else v for k, v in kw.items() if k != "initial_states"}
    state = kw["initial_states"].clone()
    expected_state = kw["initial_states"].double()
    y_ref = ref.ssd_step_reference(expected_state, **to_float64(step))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = flashssm.ssd_step(state, **step)
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(state, expected_state, torch.float32, "state")
