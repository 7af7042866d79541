"""causal_conv1d and rmsnorm_gated through torch.compile (inductor) against eager, forward and gradients, in the
layouts a Mamba-2 mixer hands them (x, z as column slices of in_proj's output), and what torch's analysis of each
launched kernel says it writes (`identify_accessed_tensors`, which decides the arguments torch.compile clones and
copies back) beside the arguments that share memory.

    PYTHONPATH=. python3 benchmarks/compile_conv_check.py [--dim 1792] [--seqlen 512] [--dtype bf16 --dtype fp32]

Seventy-first session: the 130M Mamba-2 model trained through torch.compile reached NaN where eager did not, and
swapping the conv for its reference cured it (benchmarks/compiled_grads_check.py).
"""

import argparse

import torch

from benchmarks.compile_mixer_check import _report
from flashssm import _runtime

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _analyse(calls):
    from torch._higher_order_ops import triton_kernel_wrap as wrap

    for kernel, args, meta in calls:
        kw = dict(zip(kernel.arg_names, args))
        kw.update({k: v for k, v in meta.items() if k in kernel.arg_names})
        groups = {}
        for n, v in kw.items():
            if isinstance(v, torch.Tensor):
                groups.setdefault(v.untyped_storage().data_ptr(), []).append(n)
        try:  # (torch 2.13: identify_accessed_tensors; 2.11: identify_mutated_tensors, the names)
            if hasattr(wrap, "identify_accessed_tensors"):
                writes = sorted(d.name for d in wrap.identify_accessed_tensors(kernel, kw, {}).read_writes.writes)
            else:
                writes = sorted(wrap.identify_mutated_tensors(kernel, kw, {}))
        except Exception as err:
            writes = f"analysis failed ({type(err).__name__}: {str(err).splitlines()[0][:120] if str(err) else ''})"
        print(f"    {kernel.fn.__name__}: writes {writes}; shared memory {[g for g in groups.values() if len(g) > 1]}")


def _compare(name, fn, inputs, dy):
    def run(f):
        leaves = [t.detach().clone().requires_grad_() if t is not None and t.is_floating_point() else t for t in inputs]
        out = f(*leaves)
        grads = torch.autograd.grad(out, [t for t in leaves if t is not None and t.requires_grad], dy)
        return [out.detach(), *grads]

    calls = []
    real = _runtime._launch

    def spy(kernel, grid, args, device, meta):
        calls.append((kernel, args, dict(meta)))
        return real(kernel, grid, args, device, meta)

    _runtime._launch = spy
    try:
        eager = run(fn)
    finally:
        _runtime._launch = real
    torch._dynamo.reset()
    try:
        comp = run(torch.compile(fn))
    except Exception as err:
        print(f"{name}: compiled call failed ({type(err).__name__}: {str(err).splitlines()[0][:160]})")
        return
    _report(f"{name}: compiled against eager", eager, comp)
    _analyse(calls)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=1792, help="the conv's channels (130M Mamba-2: 1536 + 2 x 128)")
    ap.add_argument("--seqlen", type=int, default=512)
    ap.add_argument("--dtype", action="append")
    args = ap.parse_args()
    from flashssm import causal_conv1d, rmsnorm_gated
    from flashssm.ops.conv1d import conv

    conv.COMPILE_FORM = "kernel"  # (the conv's kernels traced, as before the seventy-first session's fix)
    dev = "cuda"
    for dname in args.dtype or ["bf16", "fp32"]:
        dtype = DTYPES[dname]
        torch.manual_seed(0)
        d, L = args.dim, args.seqlen
        wide = torch.randn(2, L, 2 * d + 24, device=dev, dtype=dtype)
        x_channels = wide[..., d:2 * d].transpose(1, 2)  # (a column slice of in_proj's output, channels contiguous)
        x_tokens = torch.randn(2, d, L, device=dev, dtype=dtype)
        w = torch.randn(d, 4, device=dev, dtype=dtype) * 0.3
        b = torch.randn(d, device=dev, dtype=dtype)
        for layout, x in (("channels", x_channels), ("tokens", x_tokens)):
            dy = torch.randn_like(x)
            _compare(f"conv1d {dname} {layout}", lambda x, w, b: causal_conv1d(x, w, b, "silu"), (x, w, b), dy)
        y = wide[..., :d]
        z = wide[..., d:2 * d]
        nw = torch.randn(d, device=dev, dtype=dtype)
        _compare(f"rmsnorm_gated {dname} z", lambda y, nw, z: rmsnorm_gated(y, nw, z, group_size=d // 2),
                 (y, nw, z), torch.randn(y.shape, device=dev, dtype=dtype))
        _compare(f"rmsnorm_gated {dname} no z", lambda y, nw: rmsnorm_gated(y, nw), (y, nw),
                 torch.randn(y.shape, device=dev, dtype=dtype))


if __name__ == "__main__":
    main()
