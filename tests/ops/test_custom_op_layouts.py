"""The custom ops' fake implementations against the real ops, on inputs in the layouts the models pass.

torch.compile plans its buffers from the fake implementation: an output whose real strides differ from the fake's
fails Inductor's size-and-stride assertion at run time, or (without it) is read with the wrong strides. The Mamba-1
mixer hands selective_scan (batch, dim, seqlen) views of (batch, seqlen, dim) tensors, and the Mamba-2 mixer hands
ssd_scan slices of its input projection; `torch.library.opcheck` runs each op on real and fake tensors and compares
every output's shape, dtype and strides.
"""

import pytest
import torch

from flashssm.ops.selective_scan.autograd import selective_scan_bwd, selective_scan_fwd
from flashssm.ops.ssd.autograd import ssd_scan_bwd, ssd_scan_fwd
from tests.helpers import relaid, scan_inputs, ssd_inputs

CHECKS = ("test_schema", "test_faketensor")


def padded(t: torch.Tensor) -> torch.Tensor:
    """t's values as a slice of a wider last axis: not dense (as a slice of a projection's output is)."""
    wide = t.new_zeros((*t.shape[:-1], t.shape[-1] + 3))
    wide[..., :t.shape[-1]] = t
    return wide[..., :t.shape[-1]]


SCAN_LAYOUTS = {
    "contiguous": lambda name, t: t,
    # the Mamba-1 mixer: u, delta, z as (batch, dim, seqlen) views of (batch, seqlen, dim); B, C sliced from x_proj's
    "model": lambda name, t: (relaid(t, (0, 2, 1)) if name in ("u", "delta", "z")
                              else padded(t.transpose(-1, -2)).transpose(-1, -2) if name in ("B", "C") else t),
    "strided": lambda name, t: padded(t) if name in ("u", "delta", "z", "B", "C") else t,
}


@pytest.mark.parametrize("layout", SCAN_LAYOUTS)
@pytest.mark.parametrize("varlen", [False, True], ids=["dense", "varlen"])
def test_selective_scan_ops_fake_matches_real(layout, varlen, device):
    kw = scan_inputs(1 if varlen else 2, 4, 19, 3, dtype=torch.float32, device=device, D=True, z=True,
                     delta_bias=True, delta_softplus=True)
    kw = {k: SCAN_LAYOUTS[layout](k, v) if isinstance(v, torch.Tensor) and v.dim() == 3 else v
          for k, v in kw.items()}
    cu = torch.tensor([0, 7, 7, 19], dtype=torch.int32, device=device) if varlen else None
    args = (kw["u"], kw["delta"], kw["A"], kw["B"], kw["C"], kw["D"], kw["z"], kw["delta_bias"], cu, True, True, 8)
    if layout == "model":
        assert kw["u"].stride(1) == 1 and not kw["B"].is_contiguous()
    torch.library.opcheck(selective_scan_fwd, args, test_utils=CHECKS)
    y, last, ckpt = selective_scan_fwd(*args)
    dy = relaid(torch.randn_like(y), (0, 2, 1)) if layout == "model" else torch.randn_like(y)
    bargs = (dy, torch.randn_like(last), *args[:9], ckpt, True, 8, False, [True] * 8)
    torch.library.opcheck(selective_scan_bwd, bargs, test_utils=CHECKS)


SSD_LAYOUTS = {
    "contiguous": lambda name, t: t,
    # the Mamba-2 mixer: x, B, C slices of the projection's xBC, dt and z of zxbcdt (not dense)
    "model": lambda name, t: (padded(t.flatten(2)).unflatten(2, t.shape[2:]) if t.dim() == 4 else padded(t)),
    # dense, but heads outermost after the batch
    "permuted": lambda name, t: relaid(t, (0, 2, 1, 3)) if t.dim() == 4 else relaid(t, (0, 2, 1)),
}


@pytest.mark.parametrize("layout", SSD_LAYOUTS)
@pytest.mark.parametrize("varlen", [False, True], ids=["dense", "varlen"])
def test_ssd_scan_ops_fake_matches_real(layout, varlen, device):
    kw = ssd_inputs(1 if varlen else 2, 19, 2, 4, 3, 1, dtype=torch.float32, device=device, D="h", z=True,
                    dt_bias=True, dt_softplus=True, initial_states=not varlen)
    for k in ("x", "dt", "B", "C", "z"):
        kw[k] = SSD_LAYOUTS[layout](k, kw[k])
    cu = torch.tensor([0, 7, 7, 19], dtype=torch.int32, device=device) if varlen else None
    init = kw.get("initial_states")
    args = (kw["x"], kw["dt"], kw["A"], kw["B"], kw["C"], kw["D"], kw["z"], kw["dt_bias"], init, cu, 16, True,
            0.0, float("inf"), True, "float32", True)
    torch.library.opcheck(ssd_scan_fwd, args, test_utils=CHECKS)
    y, final, ypre = ssd_scan_fwd(*args)
    # (dy, dfinal, x, dt, A, B, C, D, z, ypre, dt_bias, initial_states, cu_seqlens, chunk_size, dt_softplus, dt_lo,
    # dt_hi, state_dtype, deterministic, needs)
    bargs = (torch.randn_like(y), torch.randn_like(final), *args[:7], ypre, kw["dt_bias"], init, cu, 16, True, 0.0,
             float("inf"), "float32", False, [True] * 8 + [init is not None])
    torch.library.opcheck(ssd_scan_bwd, bargs, test_utils=CHECKS)


@pytest.mark.parametrize("layout", ["channels", "tokens"])
@pytest.mark.parametrize("options", ["plain", "bias,init,final", "varlen,bias,final"])
def test_causal_conv1d_ops_fake_matches_real(layout, options, device):
    """The conv's custom ops (`conv.COMPILE_FORM = "custom_op"`): the Mamba-2 mixer's xBC (a column slice of the
    projection's output, channels contiguous) and a dense tokens-contiguous x; bias, initial and final states,
    packed sequences."""
    from flashssm.ops.conv1d.autograd import causal_conv1d_bwd, causal_conv1d_fwd

    varlen = "varlen" in options
    batch, dim, seqlen = (1 if varlen else 2), 12, 19
    if layout == "channels":
        x = padded(torch.randn(batch, seqlen, dim, device=device)).transpose(1, 2)
        assert x.stride(1) == 1 and not x.is_contiguous()
    else:
        x = torch.randn(batch, dim, seqlen, device=device)
    weight = torch.randn(dim, 3, device=device)
    bias = torch.randn(dim, device=device) if "bias" in options else None
    cu = torch.tensor([0, 7, 7, 19], dtype=torch.int32, device=device) if varlen else None
    num_seqs = 3 if varlen else batch
    init = torch.randn(num_seqs, dim, 2, device=device) if "init" in options else None
    final = "final" in options
    args = (x, weight, bias, init, cu, True, final)
    torch.library.opcheck(causal_conv1d_fwd, args, test_utils=CHECKS)
    y, last = causal_conv1d_fwd(*args)
    dy = relaid(torch.randn_like(y), (0, 2, 1)) if layout == "tokens" else torch.randn_like(y)
    bargs = (dy, torch.randn_like(last) if final else None, x, weight, bias, init, cu, True, init is not None)
    torch.library.opcheck(causal_conv1d_bwd, bargs, test_utils=CHECKS)


@pytest.mark.parametrize("options", ["z-slice", "no-z", "z,before,bf16-out"])
def test_rmsnorm_gated_ops_fake_matches_real(options, device):
    """The gated norm's custom ops (`rmsnorm.COMPILE_FORM = "custom_op"`): x and z column slices of a wider
    projection (the Mamba-2 mixer's z), without z, and normalised before the gate into bf16."""
    from flashssm.ops.norm.autograd import rmsnorm_gated_bwd, rmsnorm_gated_fwd

    dim = 16
    wide = torch.randn(2, 7, 2 * dim + 3, device=device)
    x = wide[..., :dim]
    z = None if options == "no-z" else wide[..., dim + 1:2 * dim + 1]
    weight = torch.randn(dim, device=device)
    out_dtype = torch.bfloat16 if "bf16" in options else None
    args = (x, weight, z, 1e-5, dim // 2, "before" in options, out_dtype)
    torch.library.opcheck(rmsnorm_gated_fwd, args, test_utils=CHECKS)
    y = rmsnorm_gated_fwd(*args)
    torch.library.opcheck(rmsnorm_gated_bwd, (torch.randn_like(y), *args[:6]), test_utils=CHECKS)


def test_add_rmsnorm_ops_fake_matches_real(device):
    """The fused add + norm's custom ops: bf16 hidden into an fp32 residual stream, y in bf16."""
    from flashssm.ops.norm.autograd import add_rmsnorm_bwd, add_rmsnorm_fwd

    hidden = torch.randn(2, 7, 24, device=device).to(torch.bfloat16)
    residual = torch.randn(2, 7, 24, device=device)
    weight = torch.randn(24, device=device)
    args = (hidden, residual, weight, 1e-5, torch.float32, torch.bfloat16)
    torch.library.opcheck(add_rmsnorm_fwd, args, test_utils=CHECKS)
    y, s = add_rmsnorm_fwd(*args)
    bargs = (torch.randn_like(y), torch.randn_like(s), weight, s, 1e-5, torch.bfloat16, torch.float32)
    torch.library.opcheck(add_rmsnorm_bwd, bargs, test_utils=CHECKS)
