"""A/B of a module switch over ssd_scan's forward (no gradients), alternating in one process.

    PYTHONPATH=. python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.PAIR \
        [--value False --value True] [--workload 2.7b-8x4K ...] [--rounds 5] [--kernels] [--set MODULE.NAME=VALUE]

The switch is a module attribute read when a launch is made, given as MODULE.NAME; --value (repeated) gives its values
as Python literals (default False, True). Per bench workload (`flashssm.bench.workloads`: the 2.7B rows, the layer
rows with D, dt_bias and softplus): the forward's medians over rounds of do_bench medians (ms) for each value, the
change against the first, and whether y and the final states have the same bits as the first value's; --kernels: each
kernel's GPU time a call by the profiler too (medians over rounds), which leaves out the host's share of the call;
--set: another switch held at a value for the whole run.
"""

import argparse

import torch
from triton.testing import do_bench

import flashssm
from benchmarks.train_harness import switch
from benchmarks.tune_ssd_backward import kernel_times
from flashssm.bench.workloads import WORKLOADS


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("switch")
    parser.add_argument("--value", action="append")
    parser.add_argument("--workload", action="append")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kernels", action="store_true", help="each kernel's GPU time by the profiler too")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="another switch held at this value (a Python literal) for every value compared (repeat)")
    args = parser.parse_args()
    for item in args.set:  # (for the whole run: a separate process per combination)
        target, literal = item.split("=", 1)
        held_module, held_attr, (held_value,), _ = switch(target, [literal])
        setattr(held_module, held_attr, held_value)
    module, name, values, saved = switch(args.switch, args.value)
    try:
        for wname in args.workload or ["2.7b-8x4K", "2.7b-32x2K"]:
            w = WORKLOADS[wname]
            inp = w.make_inputs("cuda")
            opts = w.options(*(inp.pop(k) for k in w.extra_inputs)) if hasattr(w, "extra_inputs") else {}
            call = lambda: flashssm.ssd_scan(**inp, **opts, chunk_size=w.chunk_size,  # noqa: E731
                                             return_final_states=inp.get("cu_seqlens") is None)
            outs, times = [], {v: [] for v in map(repr, values)}
            kernels = {v: {} for v in map(repr, values)}
            for v in values:
                setattr(module, name, v)
                outs.append(call())
            for _ in range(args.rounds):
                for v in values:
                    setattr(module, name, v)
                    times[repr(v)].append(do_bench(call, warmup=25, rep=200, return_mode="median"))
                    if args.kernels:
                        for k, t in kernel_times(call, calls=10)[0].items():
                            kernels[repr(v)].setdefault(k, []).append(t)
            med = {k: sorted(t)[len(t) // 2] for k, t in times.items()}
            first = repr(values[0])
            line = f"{wname}: " + ", ".join(
                f"{k} {m:.4f} ms ({m / med[first] - 1:+.1%})" for k, m in med.items())
            same = [all(torch.equal(a, b) for a, b in zip(o if isinstance(o, tuple) else (o,),
                                                          outs[0] if isinstance(outs[0], tuple) else (outs[0],)))
                    for o in outs[1:]]
            print(line + f"; same bits as {first}: {same}", flush=True)
            for k in sorted({k for per in kernels.values() for k in per}):
                kmed = {v: sorted(per[k])[len(per[k]) // 2] if k in per else float("nan") for v, per in kernels.items()}
                if not any(m > 0 for m in kmed.values()):  # (the profiler's host-side entries: no GPU time)
                    continue
                print("    " + ", ".join(f"{v} {m:.4f}" for v, m in kmed.items()) + f" ms  {k[:70]}", flush=True)
    finally:
        setattr(module, name, saved)


if __name__ == "__main__":
    main()
