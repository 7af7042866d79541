"""The selective-scan reference against a closed form, its step, and the public CPU path."""

import math
import warnings

import pytest
import torch

import flashssm
from flashssm.ops.selective_scan import reference as ref
from tests.helpers import assert_close, scan_inputs, to_float64


def closed_form(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False):
    """y_t = sum_{s<=t} <exp(A sum_{s<k<=t} delta_k) delta_s B_s u_s, C_t> in one tensor expression."""
    dlt = delta.double()
    if delta_bias is not None:
        dlt = dlt + delta_bias.double()[:, None]
    if delta_softplus:
        dlt = torch.nn.functional.softplus(dlt)
    batch, dim, seqlen = u.shape
    Bd, Cd = B.double(), C.double()
    if Bd.dim() == 3:
        Bd, Cd = Bd[:, None], Cd[:, None]
    Bd = Bd.repeat_interleave(dim // Bd.shape[1], dim=1)  # [batch, dim, dstate, seqlen]
    Cd = Cd.repeat_interleave(dim // Cd.shape[1], dim=1)
    cum = torch.cumsum(dlt, dim=-1)  # [batch, dim, seqlen]
    seg = cum[..., :, None] - cum[..., None, :]  # [batch, dim, t, s] = sum_{s<k<=t} delta_k
    causal = torch.ones(seqlen, seqlen, dtype=torch.bool).tril()
    decay = torch.exp(seg[..., None] * A.double()[None, :, None, None, :])  # [batch, dim, t, s, dstate]
    decay = decay * causal[:, :, None]
    contrib = decay * (dlt * u.double())[:, :, None, :, None] * Bd.transpose(-1, -2)[:, :, None]
    y = (contrib.sum(3) * Cd.transpose(-1, -2)).sum(-1)
    if D is not None:
        y = y + D.double()[:, None] * u.double()
    if z is not None:
        y = y * torch.nn.functional.silu(z.double())
    return y


OPTIONS = [dict(), dict(D=True), dict(z=True), dict(delta_bias=True, delta_softplus=True),
           dict(D=True, z=True, delta_bias=True, delta_softplus=True)]


@pytest.mark.parametrize("ngroups", [None, 1, 2, 6])
@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "-".join(o) or "plain")
def test_sequential_matches_closed_form(ngroups, opts):
    kw = scan_inputs(2, 6, 17, 5, ngroups=ngroups, **opts)
    y = ref.selective_scan_reference(**kw)
    assert_close(y, closed_form(**kw), torch.float64)


def test_recurrence_by_hand():
    u = torch.tensor([[[1.0, 2.0]]], dtype=torch.float64)
    delta = torch.tensor([[[0.5, 1.0]]], dtype=torch.float64)
    A = torch.tensor([[-1.0]])
    B = torch.ones(1, 1, 2, dtype=torch.float64)
    C = torch.tensor([[[1.0, 2.0]]], dtype=torch.float64)
    h1 = 0.5 * 1.0
    h2 = math.exp(-1.0) * h1 + 1.0 * 2.0
    y, last = ref.selective_scan_reference(u, delta, A, B, C, D=torch.tensor([0.5]), return_last_state=True)
    torch.testing.assert_close(y, torch.tensor([[[h1 + 0.5, 2 * h2 + 1.0]]], dtype=torch.float64), rtol=1e-14, atol=0)
    torch.testing.assert_close(last, torch.tensor([[[h2]]], dtype=torch.float64), rtol=1e-14, atol=0)


def test_grouped_with_one_group_equals_shared(device):
    kw = scan_inputs(2, 4, 30, 8, ngroups=1, device=device, D=True, z=True)
    shared = dict(kw, B=kw["B"][:, 0], C=kw["C"][:, 0])
    torch.testing.assert_close(ref.selective_scan_reference(**kw), ref.selective_scan_reference(**shared),
                               rtol=0, atol=0)


def test_groups_split_channels(device):
    """With two groups, each half of the channels is a scan with its own shared B and C."""
    kw = scan_inputs(2, 8, 30, 4, ngroups=2, device=device, D=True, delta_bias=True, delta_softplus=True)
    y, last = ref.selective_scan_reference(**kw, return_last_state=True)
    for g, half in enumerate((slice(0, 4), slice(4, 8))):
        part = dict(u=kw["u"][:, half], delta=kw["delta"][:, half], A=kw["A"][half], B=kw["B"][:, g],
                    C=kw["C"][:, g], D=kw["D"][half], delta_bias=kw["delta_bias"][half], delta_softplus=True)
        y_g, last_g = ref.selective_scan_reference(**part, return_last_state=True)
        torch.testing.assert_close(y[:, half], y_g, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(last[:, half], last_g, rtol=1e-12, atol=1e-12)


def test_reference_gradcheck():
    kw = scan_inputs(1, 2, 5, 3, ngroups=2, D=True, z=True, delta_bias=True, delta_softplus=True)
    kw = to_float64(kw)
    names = ["u", "delta", "A", "B", "C", "D", "z", "delta_bias"]
    for k in names:
        kw[k].requires_grad_(True)

    def fn(*tensors):
        return ref.selective_scan_reference(**dict(kw, **dict(zip(names, tensors))), return_last_state=True)

    assert torch.autograd.gradcheck(fn, [kw[k] for k in names])


@pytest.mark.parametrize("ngroups", [None, 2])
def test_step_matches_scan(ngroups, device):
    kw = scan_inputs(3, 6, 20, 5, ngroups=ngroups, device=device, D=True, z=True, delta_bias=True,
                     delta_softplus=True)
    y_scan, last = ref.selective_scan_reference(**kw, return_last_state=True)
    state = torch.zeros(3, 6, 5, dtype=torch.float64, device=device)
    ys = []
    for t in range(20):
        step = {k: (v[..., t] if k in ("u", "delta", "z", "B", "C") else v) for k, v in kw.items()}
        ys.append(ref.selective_scan_step_reference(state, **step))
    assert_close(torch.stack(ys, dim=-1), y_scan, torch.float64, "y")
    assert_close(state, last, torch.float64, "state")


def test_step_state_batch_indices(device):
    kw = scan_inputs(3, 6, 1, 5, device=device, D=True)
    step = {k: (v[..., 0] if k in ("u", "delta", "B", "C") else v) for k, v in kw.items()}
    cache = torch.randn(5, 6, 5, dtype=torch.float64, device=device)
    before = cache.clone()
    idx = torch.tensor([-1, 3, 0], device=device, dtype=torch.int32)
    y = ref.selective_scan_step_reference(cache, **step, state_batch_indices=idx)
    own = before[[3, 0]].clone()
    y_own = ref.selective_scan_step_reference(own, **{k: (v[[1, 2]] if k in ("u", "delta", "B", "C") else v)
                                                      for k, v in step.items()})
    torch.testing.assert_close(cache[[3, 0]], own, rtol=0, atol=0)
    torch.testing.assert_close(y[[1, 2]], y_own, rtol=0, atol=0)
    assert (y[0] == 0).all()
    torch.testing.assert_close(cache[[1, 2, 4]], before[[1, 2, 4]], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_public_selective_scan(dtype, device):
    kw = scan_inputs(2, 8, 40, 6, ngroups=2, dtype=dtype, device=device, D=True, z=True, delta_bias=True,
                     delta_softplus=True)
    y_ref, last_ref = ref.selective_scan_reference(**to_float64(kw), return_last_state=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y, last = flashssm.selective_scan(**kw, return_last_state=True)
    assert y.dtype == dtype and last.dtype == torch.float32
    assert_close(y, y_ref, dtype, "y")
    assert_close(last, last_ref, dtype, "last_state")


def test_public_selective_scan_step(device):
    kw = scan_inputs(2, 6, 1, 5, dtype=torch.float32, device=device, D=True, z=True)
    step = {k: (v[..., 0] if k in ("u", "delta", "B", "C", "z") else v) for k, v in kw.items()}
    state = torch.randn(2, 6, 5, device=device)
    expected = state.double()
    y_ref = ref.selective_scan_step_reference(expected, **to_float64(step))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = flashssm.selective_scan_step(state, **step)
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(state, expected, torch.float32, "state")
