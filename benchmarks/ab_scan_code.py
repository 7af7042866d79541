"""A/B of the selective scan's kernels against an earlier version of `scan.py`, alternating in one process (medians of
rounds): for a change meant to leave the kernels' speed and results alone (a refactor), or to time one that does not.
Per workload: the forward alone, the forward with the stored states, and the backward alone (picked configurations),
each from the current module and from the file given; and the largest difference between the two versions' outputs
and gradients (0 for a refactor that keeps every floating-point operation, except in dB and dC, summed by float
atomics in an order that changes from run to run: their spread between two runs of the old version is printed
beside them). With --old a copy of the current scan.py, the timings show the A/B's own noise.

    git show REV:flashssm/ops/selective_scan/scan.py > /tmp/scan_old.py  (packed workloads too: their cu_seqlens
                                                                          passed as the public path passes them)
    PYTHONPATH=. python benchmarks/ab_scan_code.py --old /tmp/scan_old.py [--rounds 3] WORKLOAD ...
"""

import argparse
import dataclasses
import importlib.util
import statistics
import sys

import torch
from triton.testing import do_bench

from benchmarks.tune_selective_scan import warm
from flashssm.bench.workloads import SCAN_TRAIN_INPUTS, WORKLOADS
from flashssm.ops.selective_scan import scan as current

_loaded = {}
GRADS = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")  # scan_backward's order


def module(path: str | None):
    """`scan` itself (path None) or the scan module in the file at path, loaded under a name of its own."""
    if path is None:
        return current
    if path not in _loaded:
        spec = importlib.util.spec_from_file_location("flashssm_scan_old", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # (dataclasses look their module up there)
        spec.loader.exec_module(mod)
        _loaded[path] = mod
    return _loaded[path]


def setup(name: str, mod):
    """The workload's three timed calls through module mod."""
    return scan_calls(WORKLOADS[name].make_inputs("cuda"), mod)


def scan_calls(inp: dict, mod, segment: int | None = None):
    """The forward alone, the forward with the stored states and the backward on a training workload's inputs,
    through scan module mod (picked configurations; the backward's segment replaced where given), and the backward's
    configuration (packed workloads: the one their rows take, where they take rows)."""
    t = [inp[k] for k in SCAN_TRAIN_INPUTS]
    batch, dim, seqlen = inp["u"].shape
    n_sms = torch.cuda.get_device_properties(0).multi_processor_count
    bcfg = mod.backward_config(batch, dim, inp["A"].shape[1], 1, seqlen, n_sms, 2)
    if segment is not None:
        bcfg = dataclasses.replace(bcfg, segment=segment)
    state = {}
    packed = {}  # (packed sequences: as the public path passes them; the backward then picks its rows' configuration)
    cu = inp.get("cu_seqlens")
    if cu is not None:
        offsets = tuple(cu.tolist())
        packed = dict(seq_index=mod.sequence_index(cu, seqlen), offsets=offsets)
    fwd_packed = dict(packed, num_seqs=len(packed["offsets"]) - 1) if packed else {}

    def fwd():
        return mod.scan_forward(*t, True, **fwd_packed)

    def fwd_states():
        state["out"] = mod.scan_forward(*t, True, ckpt_tile=bcfg.chunk, **fwd_packed)
        return state["out"]

    def bwd():
        return mod.scan_backward(inp["dy"], None, *t, True, ckpt=state["out"][2], ckpt_tile=bcfg.chunk,
                                 config=None if packed else bcfg, **packed)

    calls = {"forward": fwd, "forward + states": fwd_states}
    if "dy" in inp:  # (an inference workload has no incoming gradient: its forward alone)
        calls["backward"] = bwd
    picked = getattr(mod, "packed_backward_config", None)
    if packed and picked is not None:  # (what the packed backward picks for its rows, to report: not the dense one's)
        bcfg = picked(packed["offsets"], dim, inp["A"].shape[1], 1, n_sms, 2) or bcfg
    return calls, bcfg


def _warm_one(job):
    name, path = job
    try:
        calls, _ = setup(name, module(path))
        for f in calls.values():
            f()
        torch.cuda.synchronize()
    except Exception as e:
        return f"{name} {path or 'current'}: {type(e).__name__}: {str(e)[:200]}"
    return None


def _regs(mod, which: str) -> str:
    """Registers and spilled bytes of mod's last compiled `which` kernel (the state-storing forward's, after setup's
    calls)."""
    k = mod.last_compiled.get(which)
    return f"regs {k.n_regs} spills {k.n_spills}" if k is not None else "regs ?"


def _max_diff(a, b) -> float:
    pairs = [(x, y) for x, y in zip(a, b) if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)]
    return max(float((x.float() - y.float()).abs().max()) for x, y in pairs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="+")
    ap.add_argument("--old", required=True, help="the earlier scan.py")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    versions = {"old": args.old, "new": None}
    warm([(name, path) for name in args.workloads for path in versions.values()], _warm_one, processes=12)
    for name in args.workloads:
        calls = {v: setup(name, module(p)) for v, p in versions.items()}
        # the same inputs for both versions (make_inputs draws from a fixed seed); outputs compared once
        trains = "backward" in calls["new"][0]
        outs = {v: (c["forward + states"](), c["backward"]() if trains else ()) for v, (c, _) in calls.items()}
        again = calls["old"][0]["backward"]() if trains else ()  # dB and dC come from float atomics: their spread
        y_diff = _max_diff(outs["old"][0][:1], outs["new"][0][:1])
        regs = " ".join(f"{v} {k} {_regs(module(p), k)}" for v, p in versions.items() for k in ("forward", "backward"))
        for v, (c, _) in calls.items():  # the inference forward's kernel too (the one above stores the states)
            c["forward"]()
        regs += " | forward alone: " + " ".join(f"{v} {_regs(module(p), 'forward')}" for v, p in versions.items())
        g_diff = " ".join(f"d{k} {_max_diff([a], [b]):.1e} ({_max_diff([a], [c]):.1e})"
                          for k, a, b, c in zip(GRADS, outs["old"][1], outs["new"][1], again) if a is not None)
        times = {}
        for _ in range(args.rounds):
            for v, (c, _) in calls.items():
                for k, f in c.items():
                    times.setdefault((k, v), []).append(do_bench(f))
        print(f"\n{name}  backward {calls['new'][1]}\n  old/new max difference: y {y_diff:.1e}, {g_diff}"
              f" (in brackets: old against old)\n  {regs}")
        for k in calls["new"][0]:
            old, new = (statistics.median(times[(k, v)]) for v in versions)
            print(f"  {k:18s} old {old:.3f}  new {new:.3f} ms  ({(new / old - 1) * 100:+.1f} %)")


if __name__ == "__main__":
    main()
