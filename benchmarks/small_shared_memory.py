"""The ops on a GPU that lets a block less shared memory than Hopper's 227 KB, emulated on a Hopper: Triton's device
properties (which its launch checks a kernel's shared memory against) and flashssm's own query say `--limit-kb`.

    python benchmarks/small_shared_memory.py --limit-kb 99 [--limit-kb 64 ...]

Each limit runs in a fresh process (Triton checks a compiled kernel's shared memory once, at its first launch in a
process). In each: ssd_scan (2.7B heads' shape, bf16, z, D, dt bias and softplus; and headdim 128 x dstate 256 in fp32)
and selective_scan (dstate 16 and 256, bf16), forward and backward, against float64 (the ops' references on float64
inputs); the launches Triton refused and what took them (`_runtime.cached_launch`: one stage fewer at a time); an op
that still does not fit raises, and is said. The kernels compile for sm_90 here, whose shared memory differs from
sm_80's or sm_89's for the same kernel (`benchmarks/other_gpus.py` compiles for those): this checks the mechanism on the
real Triton and GPU, not any one GPU's figures.
"""

import argparse
import json
import os
import subprocess
import sys


def child(limit: int) -> dict:
    import torch
    import triton

    from flashssm import _runtime, selective_scan, ssd_scan
    from flashssm.ops.selective_scan.reference import selective_scan_reference
    from flashssm.ops.ssd.reference import ssd_scan_sequential

    props = triton.runtime.driver.active.utils.get_device_properties

    def capped(device):
        return {**props(device), "max_shared_mem": min(limit, props(device)["max_shared_mem"])}

    triton.runtime.driver.active.utils.get_device_properties = capped
    _runtime._cuda_shared_memory = lambda index: limit
    refused = []
    fewer = _runtime._fewer_stages

    def logged(meta, e):
        refused.append(f"{e.required // 1024} KB at {meta.get('num_stages', _runtime.DEFAULT_STAGES)} stages")
        return fewer(meta, e)

    _runtime._fewer_stages = logged
    torch.manual_seed(0)
    out = {}

    def error(got, want):
        return float((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30))

    def run(name, fn, inputs, ref):
        refused.clear()
        leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
        wide = [t.detach().double().requires_grad_(t.is_floating_point()) for t in inputs]
        try:
            y = fn(*leaves)
            dy = torch.randn_like(y)
            grads = torch.autograd.grad(y, leaves, dy)
            y64 = ref(*wide)
            grads64 = torch.autograd.grad(y64, wide, dy.double())
            torch.cuda.synchronize()
            errors = {"y": error(y, y64)}
            errors.update({f"d{i}": error(g, g64) for i, (g, g64) in enumerate(zip(grads, grads64))})
            out[name] = {"refused": list(refused), "largest error": max(errors.values()), "errors": errors}
        except Exception as e:  # noqa: BLE001 (said, and the next op runs)
            out[name] = {"refused": list(refused), "raised": f"{type(e).__name__}: {str(e)[:400]}"}

    dev = "cuda"
    for name, (b, t, h, p, n, dtype) in {"ssd 2.7B heads bf16": (2, 1024, 8, 64, 128, torch.bfloat16),
                                         "ssd p128 n256 fp32": (1, 512, 4, 128, 256, torch.float32)}.items():
        x, z = torch.randn(b, t, h, p, device=dev, dtype=dtype), torch.randn(b, t, h, p, device=dev, dtype=dtype)
        dt = torch.randn(b, t, h, device=dev)
        A = -torch.rand(h, device=dev) - 0.5
        B, C = torch.randn(b, t, 1, n, device=dev, dtype=dtype), torch.randn(b, t, 1, n, device=dev, dtype=dtype)
        D, bias = torch.randn(h, device=dev), torch.randn(h, device=dev)
        run(name, lambda x, dt, A, B, C, D, z, bias: ssd_scan(x, dt, A, B, C, D=D, z=z, dt_bias=bias,
                                                              dt_softplus=True), (x, dt, A, B, C, D, z, bias),
            lambda x, dt, A, B, C, D, z, bias: ssd_scan_sequential(x, dt, A, B, C, D=D, z=z, dt_bias=bias,
                                                                   dt_softplus=True)[0])
    for name, (b, d, t, n) in {"selective_scan n16 bf16": (2, 256, 1024, 16),
                               "selective_scan n256 bf16": (1, 64, 512, 256)}.items():
        u, z = torch.randn(b, d, t, device=dev, dtype=torch.bfloat16), torch.randn(b, d, t, device=dev,
                                                                                   dtype=torch.bfloat16)
        delta = torch.randn(b, d, t, device=dev, dtype=torch.bfloat16)
        A = -torch.rand(d, n, device=dev) - 0.5
        B, C = (torch.randn(b, n, t, device=dev, dtype=torch.bfloat16) for _ in range(2))
        D, bias = torch.randn(d, device=dev), torch.randn(d, device=dev)
        run(name, lambda u, delta, A, B, C, D, z, bias: selective_scan(u, delta, A, B, C, D=D, z=z, delta_bias=bias,
                                                                        delta_softplus=True),
            (u, delta, A, B, C, D, z, bias),
            lambda u, delta, A, B, C, D, z, bias: selective_scan_reference(u, delta, A, B, C, D, z, bias, True))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--limit-kb", type=int, action="append", required=True)
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    for kb in args.limit_kb:
        run = subprocess.run([sys.executable, __file__, "--limit-kb", str(kb), "--child", str(kb * 1024)],
                             capture_output=True, text=True, env=os.environ)
        print(f"limit {kb} KB (rc {run.returncode})")
        try:
            result = json.loads(run.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            print(run.stdout[-2000:], run.stderr[-4000:])
            continue
        for name, r in result.items():
            said = r.get("raised") or f"largest error against float64 {r['largest error']:.2e}"
            print(f"  {name}: {said}; refused: {', '.join(r['refused']) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
