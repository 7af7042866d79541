"""Time rmsnorm_gated's backward kernels at the Mamba-2 2.7B shapes (8×4K tokens, bf16): the gated
5120-wide group (two-sweep kernel) and the 2560-wide block norm (one-tile kernel), and, when a
module path is given, the same shapes through other copies of flashssm/ops/norm/rmsnorm.py (older
versions, for before/after in one run). Usage: python benchmarks/time_rmsnorm_bwd.py [OLD.py ...]"""

import importlib.util
import sys

import torch
import triton

from flashssm.ops.norm import rmsnorm


def load(path):
    spec = importlib.util.spec_from_file_location(path.replace("/", "_").removesuffix(".py"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    mods = {"current": rmsnorm}
    for path in sys.argv[1:]:
        mods[path] = load(path)
    rows = 8 * 4096
    for width, gated in ((5120, True), (2560, False)):
        x = torch.randn(rows, width, device="cuda", dtype=torch.bfloat16)
        z = torch.randn_like(x) if gated else None
        dy = torch.randn_like(x)
        w = torch.randn(width, device="cuda")
        nbytes = x.numel() * 2 * (5 if gated else 3)   # read x, dy (z); write dx (dz)
        for name, mod in mods.items():
            fn = lambda: mod.rmsnorm_backward(x, w, z, dy, 1e-5, width, False)
            ms = triton.testing.do_bench(fn, warmup=25, rep=200)
            print(f"{name:18s} width {width} gated {gated}: {ms * 1e3:8.1f} µs, {nbytes / ms / 1e6:6.0f} GB/s counted",
                  flush=True)


if __name__ == "__main__":
    main()
