"""One workload's selective-scan forward or backward, run twice (a warm-up that compiles, then the launch a profiler
takes), through a variant of the scan module: `current`, an earlier scan.py's path, or NAME=VALUE (one of the current
module's switches, the value a Python literal). `profile_scan_pair.sh` runs it under Nsight Compute.

    PYTHONPATH=. python benchmarks/profile_scan_one.py WORKLOAD VARIANT {forward,backward}

The forward is the inference forward (no stored states); the backward follows a forward that stores them.
"""

import argparse
import ast

import torch

from benchmarks.ab_scan_code import module, scan_calls
from flashssm.bench.workloads import WORKLOADS


def variant_module(variant: str):
    """The scan module a variant names (see the module's docstring)."""
    if variant == "current":
        return module(None)
    if "=" in variant:
        mod = module(None)
        name, value = variant.split("=", 1)
        getattr(mod, name)  # (a typo fails here)
        setattr(mod, name, ast.literal_eval(value))
        return mod
    return module(variant)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("variant")
    ap.add_argument("which", choices=("forward", "backward"))
    a = ap.parse_args()
    calls, _ = scan_calls(WORKLOADS[a.workload].make_inputs("cuda"), variant_module(a.variant))
    if a.which == "backward" and "backward" not in calls:
        ap.error(f"{a.workload} has no backward (an inference workload)")
    for _ in range(2):
        if a.which == "backward":
            calls["forward + states"]()
        calls[a.which]()
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
