"""Gradients of ssd_scan and selective_scan three ways on the GPU: eager (the autograd.Function), through the custom ops
in eager mode (their registered autograd), and torch.compile with Inductor; and the Mamba-2 / Mamba-1 mixers'
parameter gradients eager against compiled. Prints the largest difference of each gradient against eager's.

    PYTHONPATH=. python benchmarks/check_compiled_grads.py
"""

import torch

import flashssm
from flashssm.ops.ssd.autograd import ssd_scan_fwd, state_dtype_name
from tests.helpers import ssd_inputs

NAMES = ["x", "dt", "A", "B", "C", "D", "z", "dt_bias"]


def ssd_three_ways(batch, seqlen, nheads, headdim, dstate, chunk):
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, 1, dtype=torch.float32, device="cuda", D="h", z=True,
                    dt_bias=True, dt_softplus=True)

    def public(x, dt, A, B, C, D, z, dt_bias):
        return flashssm.ssd_scan(x, dt, A, B, C, chunk_size=chunk, D=D, z=z, dt_bias=dt_bias, dt_softplus=True)

    def op(x, dt, A, B, C, D, z, dt_bias):
        return ssd_scan_fwd(x, dt, A, B, C, D, z, dt_bias, None, None, chunk, True, 0.0, float("inf"), False,
                            state_dtype_name(None), True)[0]

    dy = torch.randn(batch, seqlen, nheads, headdim, device="cuda")
    grads = {}
    for name, fn in (("eager", public), ("custom op", op), ("compiled", torch.compile(public, backend="inductor"))):
        args = [kw[k].detach().clone().requires_grad_() for k in NAMES]
        grads[name] = torch.autograd.grad(fn(*args), args, dy)
    print(f"ssd_scan {batch}x{seqlen} heads {nheads} headdim {headdim} dstate {dstate} chunk {chunk}:")
    for name in ("custom op", "compiled"):
        diffs = {k: (a - b).abs().max().item() for k, a, b in zip(NAMES, grads[name], grads["eager"])}
        print(f"  {name:<10} " + " ".join(f"{k} {v:.1e}" for k, v in diffs.items()))


def mixers():
    from flashssm.modules import Mamba2Mixer, MambaMixer

    torch._dynamo.reset()
    for mixer in (Mamba2Mixer(32, d_state=16, headdim=16, chunk_size=16, device="cuda"),
                  MambaMixer(32, d_state=8, device="cuda")):
        x = torch.randn(2, 19, 32, device="cuda")
        params = dict((n, p) for n, p in mixer.named_parameters() if p.requires_grad)
        # (as tests/models/test_models.py's test: a compiled forward first, its graph dropped)
        compiled = torch.compile(mixer, fullgraph=True, backend="inductor")
        print("forward", (compiled(x) - mixer(x)).abs().max().item())
        got = torch.autograd.grad(compiled(x).square().sum(), list(params.values()))
        want = torch.autograd.grad(mixer(x).square().sum(), list(params.values()))
        print(type(mixer).__name__, " ".join(f"{n} {(g - w).abs().max().item():.1e}/{w.abs().max().item():.1e}"
                                             for n, g, w in zip(params, got, want)))


def autograd_functions(label):
    """rmsnorm_gated and causal_conv1d (autograd.Functions whose launches Dynamo traces into the graph), compiled against
    eager: the largest difference, and how many of the compiled gradients are NaN."""
    torch._dynamo.reset()
    x = torch.randn(2, 19, 64, device="cuda")
    z = torch.randn(2, 19, 64, device="cuda")
    w = torch.randn(64, device="cuda")
    xc = torch.randn(2, 64, 19, device="cuda")
    wc = torch.randn(64, 4, device="cuda")
    bc = torch.randn(64, device="cuda")
    cases = {"rmsnorm_gated": (lambda x, z, w: flashssm.rmsnorm_gated(x, w, z, group_size=32), (x, z, w)),
             "causal_conv1d": (lambda x, w, b: flashssm.causal_conv1d(x, w, b, "silu"), (xc, wc, bc))}
    for name, (fn, inputs) in cases.items():
        args = [t.clone().requires_grad_() for t in inputs]
        want = torch.autograd.grad(fn(*args).square().sum(), args)
        got = torch.autograd.grad(torch.compile(fn, backend="inductor")(*args).square().sum(), args)
        print(f"{label} {name}: " + " ".join(f"diff {(g - w_).abs().max().item():.1e} nan {g.isnan().sum().item()} "
                                              f"max {g.abs().max().item():.1e}" for g, w_ in zip(got, want)))


if __name__ == "__main__":
    import sys

    from flashssm import _runtime

    print(torch.cuda.get_device_name(), "torch", torch.__version__, "poison", _runtime.poison_outputs())
    if "--functions" in sys.argv:
        autograd_functions("as is")
        poisoned = _runtime._poisoned
        _runtime._poisoned = lambda out: out if torch.compiler.is_compiling() else poisoned(out)
        autograd_functions("no fill while compiling")
        mixers()
        sys.exit()
    ssd_three_ways(2, 19, 4, 16, 16, 16)
    ssd_three_ways(2, 300, 4, 64, 64, 64)
    mixers()
