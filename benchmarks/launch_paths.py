"""Which of the package's kernels take Triton's own launch on every call (`_runtime._layouts` -1: a call outside the
layout the direct launch keys, or a parameter it cannot fill) after a round of public calls on the GPU: the SSD
forward (batch 1 and many chains, with options), its training call (the sweeps at 1x2K, the tiles at 1x8K), the
decoding steps, selective_scan with its backward, causal conv1d and the gated RMSNorm.

    PYTHONPATH=. python3 benchmarks/launch_paths.py
"""

import torch

import flashssm
from flashssm import _runtime
from flashssm.bench.workloads import WORKLOADS


def main():
    from flashssm.bench.impls import IMPLS

    small = ("2.7b-1x2K", "2.7b-8x4K", "train-2.7b-1x2K", "train-2.7b-1x8K", "step-2.7b-b1", "m1step-2.8b-b128",
             "m1-2.8b-8x2K", "m1-2.8b-1x32K", "m1train-130m-1x8K", "conv-2.7b-8x4K", "norm-2.7b-8x4K")
    for name in small:
        w = WORKLOADS[name]
        fn = IMPLS[w.op]["flashssm"].setup(w, w.make_inputs("cuda"))
        for _ in range(2):
            fn()
    inp = WORKLOADS["2.7b-1x2K"].make_inputs("cuda")  # with every option
    for _ in range(2):
        flashssm.ssd_scan(inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], chunk_size=256,
                          D=torch.ones(80, device="cuda"), z=torch.randn_like(inp["x"]), dt_softplus=True,
                          return_final_states=True)
    torch.cuda.synchronize()
    kernels = {id(v): k for k, v in _kernels().items()}
    for kernel_id, n in _runtime._layouts.items():
        print(f"{kernels.get(kernel_id, kernel_id)}: {'Triton launch every call' if n < 0 else 'direct'}")


def _kernels():
    import importlib
    import pkgutil

    import flashssm.ops as ops

    found = {}
    for mod in pkgutil.walk_packages(ops.__path__, "flashssm.ops."):
        m = importlib.import_module(mod.name)
        for k, v in vars(m).items():
            if hasattr(v, "arg_names"):
                found[f"{mod.name}.{k}"] = v
    return found


if __name__ == "__main__":
    main()
