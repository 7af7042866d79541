"""The small Triton functions the kernels share."""

import torch
import triton
import triton.language as tl

from flashssm.ops.triton_common import fast_exp, softplus
from tests.conftest import DEVICE


@triton.jit
def _elementwise_kernel(v_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    """out = FN(v), FN one of the functions under test."""
    o = tl.arange(0, BLOCK)
    v = tl.load(v_ptr + o, mask=o < n, other=0.0)
    tl.store(out_ptr + o, FN(v), mask=o < n)


def test_softplus_is_accurate_for_very_negative_inputs():
    """The kernels' softplus against float64 torch where log(1 + e^v) in fp32 loses e^v's digits
    (fuzzing found 3e-2 errors in selective_scan with delta near -14 before the series form)."""
    v = torch.tensor([-100.0, -30.0, -15.0, -14.0, -8.0, -5.0, -4.6, -2.31, -2.29, -1.0, 0.0, 1.0, 19.9, 20.0, 25.0,
                      float("nan")], device=DEVICE)
    out = torch.empty_like(v)
    _elementwise_kernel[(1,)](v, out, v.numel(), FN=softplus, BLOCK=16)
    want = torch.nn.functional.softplus(v.double()).float().double()  # e^-100 is an fp32 subnormal
    rel = ((out.double() - want).abs() / want.abs())[:-1]
    assert rel.max() < 2e-6, rel  # the GPU's exp and log are approximate (a few ulp)
    assert torch.isnan(out[-1])


def test_fast_exp():
    """fast_exp (2^(x log2 e), the MUFU alone on the GPU) against float64 e^x: within a few ulp where the result is a
    normal fp32; 0 or a subnormal below 2^-126 (the GPU flushes those, which the decays it serves lose nothing by);
    0 at -inf, inf at inf and past fp32's range, NaN at NaN. A constant of log2 e 4 % off fails the tiles' tests."""
    normal = [-87.0, -30.0, -5.5, -1.0, -1e-3, -1e-30, 0.0, 1e-7, 0.5, 1.0, 10.0, 88.0]
    v = torch.tensor(normal + [-88.5, -100.0, -float("inf"), 89.0, float("inf"), float("nan")], device=DEVICE)
    out = torch.empty_like(v)
    _elementwise_kernel[(1,)](v, out, v.numel(), FN=fast_exp, BLOCK=32)
    k = len(normal)
    want = torch.exp(v[:k].double())
    rel = (out[:k].double() - want).abs() / want
    assert rel.max() < 2e-5, rel  # (|x| log2 e rounded to fp32 moves e^x by up to |x| 2^-24 relative: 88 -> 5e-6)
    assert (out[k:k + 2] >= 0).all() and (out[k:k + 2] < 2.0**-126).all(), out[k:k + 2]
    assert out[k + 2] == 0 and out[k + 3] == float("inf") and out[k + 4] == float("inf"), out[k + 2:k + 5]
    assert torch.isnan(out[-1])
