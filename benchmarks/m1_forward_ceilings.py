"""What the selective scan's forward (or backward) pays for its per-token options: the forward alone (picked
configuration) with every option of the bench (D, z, delta_bias, softplus) and with some taken away, and with a
probe switch of `scan` on (wrong results: a ceiling, not a variant), alternating in one process, medians of rounds.

    PYTHONPATH=. python benchmarks/m1_forward_ceilings.py [--rounds 5] [--probe SWITCH] [--backward] WORKLOAD ...

A probe is a boolean module switch of `scan` that a patch for the run adds (the seventy-ninth session's
PROBE_BC_FWD, two tiles of B and C read over and over: `split-out-fwd-bwd-and-bc-probe.diff` in its results folder).

Variants: "all" (the bench's call), "no z" (no gate: no silu, no z loads), "no softplus" (no delta_bias, no
softplus: delta processed beforehand), "bare" (none of D, z, delta_bias, softplus), and each --probe switch
set True with every option on. --backward: the backward alone instead, on the states its forward stored. Each is
printed with its ratio to "all". The per-token work is what "bare" removes; a probe's ratio is the most a change that
made its reads free could gain.
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

from benchmarks.tune_selective_scan import warm
from flashssm.bench.workloads import WORKLOADS, ScanTrainWorkload
from flashssm.ops.selective_scan import scan

VARIANTS = {
    "all": dict(),
    "no z": dict(z=None),
    "no softplus": dict(delta_bias=None, delta_softplus=False),
    "bare": dict(D=None, z=None, delta_bias=None, delta_softplus=False),
}


def _args(inp: dict, changes: dict) -> dict:
    """The forward on the workload's inputs with `changes` to its arguments; without the softplus, delta is the
    processed one (softplus(delta + delta_bias), in delta's dtype), so that the scan computes the same decays."""
    if not changes.get("delta_softplus", True):
        processed = torch.nn.functional.softplus(inp["delta"].float() + inp["delta_bias"].float()[:, None])
        changes = dict(changes, delta=processed.to(inp["delta"].dtype))
    args = dict(u=inp["u"], delta=inp["delta"], A=inp["A"], B=inp["B"], C=inp["C"], D=inp["D"], z=inp["z"],
                delta_bias=inp["delta_bias"], delta_softplus=True)
    args.update(changes)
    return args


def call(inp: dict, changes: dict):
    args = _args(inp, changes)
    return lambda: scan.scan_forward(**args)


def call_backward(inp: dict, changes: dict):
    """The backward alone (picked configuration) on the states its forward stored, with the same changes."""
    args = _args(inp, changes)
    batch, dim, seqlen = inp["u"].shape
    n_sms = torch.cuda.get_device_properties(0).multi_processor_count
    chunk = scan.backward_config(batch, dim, inp["A"].shape[1], 1, seqlen, n_sms, inp["u"].element_size()).chunk
    ckpt = scan.scan_forward(**args, ckpt_tile=chunk)[2]
    return lambda: scan.scan_backward(inp["dy"], None, **args, ckpt=ckpt, ckpt_tile=chunk)


def _calls(name: str, backward: bool, probes: list[str], variants: list[str]):
    """(label, call, probe switch or None) for each variant and probe of the workload."""
    inp = WORKLOADS[name].make_inputs("cuda")
    make = call_backward if backward else call
    jobs = [(v, make(inp, VARIANTS[v]), None) for v in variants]
    return jobs + [(f"probe {p}", make(inp, {}), p) for p in probes]


def _run(fn, probe):
    if probe:
        setattr(scan, probe, True)
    try:
        return do_bench(fn, warmup=25, rep=100)
    finally:
        if probe:
            setattr(scan, probe, False)


def _warm_one(job):
    """Compile one (workload, variant or probe) in a worker process; the timing process then finds it in Triton's
    cache."""
    name, backward, probe, variant = job
    try:
        for _, fn, p in _calls(name, backward, [probe] if probe else [], [variant] if variant else []):
            if p:
                setattr(scan, p, True)
            fn()
        torch.cuda.synchronize()
    except Exception as e:
        return f"{job}: {type(e).__name__}: {str(e)[:200]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--probe", action="append", default=[], help="a boolean switch of `scan` (a probe) to time on")
    ap.add_argument("--backward", action="store_true", help="the backward alone instead (training workloads)")
    ap.add_argument("--variant", action="append", choices=list(VARIANTS), help="(default: all of them)")
    args = ap.parse_args()
    for p in args.probe:
        getattr(scan, p)  # (a typo fails here)
    if args.backward:
        for name in args.workloads:
            if not isinstance(WORKLOADS[name], ScanTrainWorkload):
                ap.error(f"--backward: {name} is not a training workload (its inputs have no dy: m1train-...)")
    variants = args.variant or list(VARIANTS)
    warm([(n, args.backward, None, v) for n in args.workloads for v in variants]
         + [(n, args.backward, p, None) for n in args.workloads for p in args.probe], _warm_one)
    for name in args.workloads:
        jobs = _calls(name, args.backward, args.probe, variants)
        for _, fn, probe in jobs:  # (compiled by the workers; loaded here)
            _run(fn, probe)
        times = {v: [] for v, _, _ in jobs}
        for _ in range(args.rounds):
            for v, fn, probe in jobs:
                times[v].append(_run(fn, probe))
        base = statistics.median(times[jobs[0][0]])
        what = "backward" if args.backward else "forward"
        print(f"{name} ({torch.cuda.get_device_name()}), {what} alone, medians of {args.rounds}:")
        for v in times:
            m = statistics.median(times[v])
            print(f"  {v:<24} {m:8.4f} ms  {m / base:6.3f} of {jobs[0][0]!r}")


if __name__ == "__main__":
    main()
