"""The kernels torch.compile traces (causal_conv1d, rmsnorm_gated and add_rmsnorm: autograd Functions whose Triton
launches Dynamo records into the graph) never pass an output twice.

A launch's absent tensor takes another tensor's pointer (its constexpr flag keeps the kernel off it). Under
torch.compile every argument the kernel may write, by torch's analysis of its IR, is cloned before the launch and
copied back after it, one argument at a time (torch/_higher_order_ops/triton_kernel_wrap.py says as much of arguments
that are views of each other): an output passed a second time as a placeholder could come back as its unwritten clone.
So a placeholder is an input's pointer, never one of the op's own buffers: every memory two arguments of a launch
share is the caller's (the op's inputs or the incoming gradients)."""

import pytest
import torch

from flashssm import causal_conv1d, rmsnorm_gated
from flashssm import _runtime
from flashssm.ops.norm import add_rmsnorm
from tests.helpers import record_calls


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def _launches(monkeypatch):
    return record_calls(monkeypatch, _runtime, "_launch",
                        lambda kernel, grid, args, device, meta: (kernel, args))


def _assert_no_output_twice(launches, given):
    caller = {_storage(t) for t in given if t is not None}
    assert launches
    for kernel, args in launches:
        seen = {}
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                seen.setdefault(_storage(a), []).append(i)
        shared = [idx for ptr, idx in seen.items() if len(idx) > 1 and ptr not in caller]
        name = getattr(getattr(kernel, "fn", kernel), "__name__", str(kernel))
        assert not shared, f"{name}: arguments {shared} share one of the op's own buffers"


def _check_call(fn, leaves, monkeypatch):
    """fn(*leaves) and its gradients: the forward's launches may share the leaves' memory only, the backward's also
    the forward's outputs' (which it reads) and the incoming gradients'."""
    launches = _launches(monkeypatch)
    out = fn(*leaves)
    outs = out if isinstance(out, tuple) else (out,)
    _assert_no_output_twice(launches, leaves)
    launches.clear()
    dys = [torch.randn_like(o) for o in outs]
    torch.autograd.grad(outs, [t for t in leaves if t is not None and t.requires_grad], dys)
    _assert_no_output_twice(launches, [*leaves, *outs, *dys])


@pytest.mark.parametrize("layout", ["channels", "tokens"])
@pytest.mark.parametrize("options", ["plain", "bias", "init,final"])
def test_conv1d_passes_no_output_twice(layout, options, device, monkeypatch):
    dim, seqlen = 24, 37
    if layout == "channels":  # (Mamba-2: a column slice of in_proj's output, transposed)
        x = torch.randn(2, seqlen, dim + 8, device=device)[..., 4:4 + dim].transpose(1, 2)
    else:
        x = torch.randn(2, dim, seqlen, device=device)
    x = x.detach().requires_grad_()
    w = torch.randn(dim, 4, device=device, requires_grad=True)
    b = torch.randn(dim, device=device, requires_grad=True) if options == "bias" else None
    init = torch.randn(2, dim, 3, device=device, requires_grad=True) if options == "init,final" else None
    final = options == "init,final"
    _check_call(lambda x, w, b, init: causal_conv1d(x, w, b, "silu", initial_states=init, return_final_states=final),
                [x, w, b, init], monkeypatch)


@pytest.mark.parametrize("options", ["z", "no-z", "z,before,bf16-out"])
def test_rmsnorm_gated_passes_no_output_twice(options, device, monkeypatch):
    dim = 32
    wide = torch.randn(3, 5, 2 * dim + 6, device=device)
    y = wide[..., :dim].detach().requires_grad_()
    z = wide[..., dim + 2:2 * dim + 2].detach().requires_grad_() if options != "no-z" else None
    weight = torch.randn(dim, device=device, requires_grad=True)
    out_dtype = torch.bfloat16 if "bf16-out" in options else None
    _check_call(lambda y, weight, z: rmsnorm_gated(y, weight, z, group_size=dim // 2,
                                                   norm_before_gate="before" in options, out_dtype=out_dtype),
                [y, weight, z], monkeypatch)


def test_add_rmsnorm_passes_no_output_twice(device, monkeypatch):
    dim = 48
    hidden, residual = (torch.randn(2, 7, dim, device=device, requires_grad=True) for _ in range(2))
    weight = torch.randn(dim, device=device, requires_grad=True)
    _check_call(lambda h, r, w: add_rmsnorm(h, r, w), [hidden, residual, weight], monkeypatch)
