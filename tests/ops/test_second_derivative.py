"""A second derivative through a kernel's backward raises; it never comes out silently as zero.

The backward kernels are not differentiable. Asked for a graph of the gradients (`create_graph=True`, as a gradient
penalty does), their outputs used to come back as constants: `loss + g.pow(2).sum()` then trained on the first term
alone, and `g.sum().backward()` failed with autograd's "does not require grad". Each op's autograd function is now
once differentiable: the first derivative is as before, and differentiating it again raises an error that says so.
"""

import pytest
import torch

import flashssm
from tests.helpers import scan_inputs, ssd_inputs


def _ssd(device):
    kw = ssd_inputs(1, 40, 2, 8, 8, 1, dtype=torch.float32, device=device)
    return kw, "x", lambda **k: flashssm.ssd_scan(**k, chunk_size=16)


def _scan(device):
    kw = scan_inputs(1, 4, 20, 3, dtype=torch.float32, device=device)
    return kw, "u", lambda **k: flashssm.selective_scan(**k)


def _conv(device):
    kw = dict(x=torch.randn(2, 8, 30, device=device), weight=torch.randn(8, 4, device=device))
    return kw, "x", lambda **k: flashssm.causal_conv1d(**k, activation="silu")


def _norm(device):
    kw = dict(x=torch.randn(3, 48, device=device), weight=torch.randn(48, device=device),
              z=torch.randn(3, 48, device=device))
    return kw, "x", lambda **k: flashssm.rmsnorm_gated(**k)


@pytest.mark.parametrize("make", [_ssd, _scan, _conv, _norm], ids=["ssd_scan", "selective_scan", "causal_conv1d",
                                                                  "rmsnorm_gated"])
def test_a_second_derivative_raises(make, device):
    kw, name, fn = make(device)
    x = kw[name].clone().requires_grad_()
    (want,) = torch.autograd.grad(fn(**dict(kw, **{name: x})).pow(2).sum(), x)
    y = fn(**dict(kw, **{name: x}))
    assert y.grad_fn is not None and "Backward" in type(y.grad_fn).__name__, "the kernels' path was not taken"
    (g,) = torch.autograd.grad(y.pow(2).sum(), x, create_graph=True)
    assert torch.equal(g.detach(), want), "the first derivative changed under create_graph"
    penalty = fn(**dict(kw, **{name: x})).sum() + g.pow(2).sum()  # (a gradient penalty)
    with pytest.raises(RuntimeError, match="differentiate twice"):
        penalty.backward()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("make", [_ssd, _scan], ids=["ssd_scan", "selective_scan"])
def test_a_second_derivative_under_torch_compile_raises(make, backend, device):
    """Compiled, the two scans trace their torch.library custom ops (registered with a first-order backward op only):
    the "eager" backend runs those ops' autograd, "aot_eager" AOTAutograd's. Neither may hand back a zero second
    derivative; each raises (the message is torch's)."""
    torch._dynamo.reset()
    kw, name, fn = make(device)
    x = kw[name].clone().requires_grad_()
    (want,) = torch.autograd.grad(fn(**dict(kw, **{name: x})).pow(2).sum(), x)
    compiled = torch.compile(lambda **k: fn(**k), backend=backend, fullgraph=True)
    (g,) = torch.autograd.grad(compiled(**dict(kw, **{name: x})).pow(2).sum(), x, create_graph=True)
    torch.testing.assert_close(g.detach(), want, rtol=1e-5, atol=1e-5)
    assert g.requires_grad, "the compiled path's gradient was a constant: a second derivative would come out as zero"
    with pytest.raises(RuntimeError, match="backward"):
        g.pow(2).sum().backward()
