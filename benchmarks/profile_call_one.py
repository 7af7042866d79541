"""One call of a workload run twice, the second between cudaProfilerStart and Stop, for Nsight Compute's
`--profile-from-start off` (`profile_fetch.sh`): every kernel of exactly one call is profiled.

    PYTHONPATH=. python3 benchmarks/profile_call_one.py ssd-forward 8x4K
    PYTHONPATH=. python3 benchmarks/profile_call_one.py ssd-train 8x4K
    PYTHONPATH=. python3 benchmarks/profile_call_one.py ssd-forward-fp16 8x4K   (x, B, C in fp16; ssd-train-fp16 too)
    PYTHONPATH=. python3 benchmarks/profile_call_one.py scan-train m1train-2.8b-8x2K   (forward with states, backward)
    PYTHONPATH=. python3 benchmarks/profile_call_one.py scan-forward m1train-2.8b-8x2K (the inference forward)
"""

import argparse

import torch


def make_call(kind: str, name: str):
    """The call of `kind` on workload `name` (see the module's docstring)."""
    if kind.startswith("ssd-"):
        from benchmarks.train_harness import forward_call, training_call

        dtype = "fp16" if kind.endswith("-fp16") else "bf16"
        if kind.startswith("ssd-forward"):
            return forward_call(name, False, dtype=dtype)
        return training_call(name, False, dtype=dtype)[0]
    from benchmarks.ab_scan_code import scan_calls
    from flashssm.bench.workloads import WORKLOADS
    from flashssm.ops.selective_scan import scan

    calls, _ = scan_calls(WORKLOADS[name].make_inputs("cuda"), scan)
    if kind == "scan-forward":
        return calls["forward"]

    def train():
        calls["forward + states"]()
        calls["backward"]()

    return train


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=("ssd-forward", "ssd-train", "ssd-forward-fp16", "ssd-train-fp16",
                                       "scan-forward", "scan-train"))
    ap.add_argument("workload")
    a = ap.parse_args()
    call = make_call(a.kind, a.workload)
    call()  # (compiles)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
