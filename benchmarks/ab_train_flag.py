"""A/B of a module switch of the SSD kernels over ssd_scan's training call, alternating in one process.

    PYTHONPATH=. python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_tiles.PATHS_AHEAD \
        [--value False --value True] [--workload 8x4K ...] [--rounds 5] [--options] [--kernel _tiles_paths_kernel]
        [--set MODULE.NAME=VALUE ...] [--forward] [--dtype fp16]

The switch is a module attribute read when a launch is made (a constexpr or a Python choice), given as
MODULE.NAME; --value (repeated) gives its values as Python literals (default False, True), each compared with the
first. Per workload (2.7B mixer shape, bf16 or --dtype fp16, the bench's train-* inputs; --options: with D, dt_bias
and softplus, --z: and z), medians over rounds of:
- the training call (forward + backward through autograd, do_bench's median, ms);
- each --kernel's GPU time a call by the profiler (default: the kernels that differ by more than 1 %, and the sum);
and each gradient's largest difference from the first value's, relative to its largest value; --peak: a call's peak
memory above what was allocated before it (MiB, as `flashssm bench` reports it).
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

from benchmarks.train_harness import add_dtype_argument, forward_call, switch, training_call
from benchmarks.tune_ssd_backward import kernel_times
from flashssm.bench.run import peak_extra_mb


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("switch", help="MODULE.NAME, e.g. flashssm.ops.ssd.backward_tiles.PATHS_AHEAD")
    parser.add_argument("--value", action="append", help="a value as a Python literal (repeat; default False, True)")
    parser.add_argument("--workload", action="append")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--options", action="store_true")
    parser.add_argument("--z", action="store_true", help="with --options: z too")
    parser.add_argument("--peak", action="store_true")
    parser.add_argument("--forward", action="store_true", help="also time the forward alone (no gradients)")
    add_dtype_argument(parser)
    parser.add_argument("--kernel", action="append", help="a kernel whose time to print (repeat)")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="another switch held at this value (a Python literal) for every value compared (repeat)")
    a = parser.parse_args()
    for item in a.set:  # (for the whole run: a separate process per combination)
        target, literal = item.split("=", 1)
        held_module, held_attr, (held_value,), _ = switch(target, [literal])
        setattr(held_module, held_attr, held_value)
    if a.z and not a.options:
        parser.error("--z adds z to --options' call: give both")
    module, attr, values, _ = switch(a.switch, a.value)
    missing = object()
    original = getattr(module, attr, missing)  # (a switch the module reads with a default may be absent)
    try:
        for spec in a.workload or ["8x4K", "1x32K"]:
            step, names = training_call(spec, a.options, a.z, a.dtype)
            fstep = forward_call(spec, a.options, a.z, a.dtype) if a.forward else None
            grads, calls, kernels = {}, {v: [] for v in map(repr, values)}, {v: {} for v in map(repr, values)}
            fwd = {v: [] for v in map(repr, values)}
            peaks = {}
            for v in values:  # compiled and warm before timing; the gradients of each value
                setattr(module, attr, v)
                grads[repr(v)] = [g.float() for g in step()]
                if a.peak:
                    peaks[repr(v)] = peak_extra_mb(step, torch.device("cuda"))
            for _ in range(a.rounds):
                for v in values:
                    setattr(module, attr, v)
                    calls[repr(v)].append(do_bench(step, warmup=50, rep=300))
                    if fstep is not None:
                        fwd[repr(v)].append(do_bench(fstep, warmup=50, rep=300))
                    times, total = kernel_times(step, calls=5)
                    times["(sum of kernels)"] = total
                    for k, t in times.items():
                        kernels[repr(v)].setdefault(k, []).append(t)
            base = repr(values[0])
            med = {v: {k: statistics.median(ts) for k, ts in kernels[v].items()} for v in kernels}
            every = {k for m in med.values() for k in m}  # (a value may launch a kernel the first does not)
            shown = a.kernel or sorted(
                (k for k in every if any(abs(med[v].get(k, 0) - med[base].get(k, 0)) > 0.01 * med[base].get(k, 0)
                                         for v in med)), key=lambda k: -max(m.get(k, 0) for m in med.values()))
            shown = [k for k in shown if k != "(sum of kernels)"] + ["(sum of kernels)"]
            opts = " (D, dt_bias, softplus, z)" if a.options and a.z else " (D, dt_bias, softplus)" if a.options else ""
            held = "".join(f", {item}" for item in a.set)
            print(f"{spec}{opts}, {a.switch}{held}, medians of {a.rounds}:")
            for v in map(repr, values):
                t = statistics.median(calls[v])
                rel = "" if v == base else f" ({t / statistics.median(calls[base]) - 1:+.1%})"
                diffs = "" if v == base else "  grads vs first: " + " ".join(
                    f"{n} {((g - g0).abs().max() / g0.abs().max().clamp_min(1e-30)).item():.1e}"
                    for n, g, g0 in zip(names, grads[v], grads[base]))
                peak = f", peak {peaks[v]:.0f} MiB" if v in peaks else ""
                print(f"  {v:>8}: call {t:.3f} ms{rel}{peak}{diffs}")
                if fstep is not None:
                    ft, fb = statistics.median(fwd[v]), statistics.median(fwd[base])
                    print(f"            forward alone {ft:.4f} ms" + ("" if v == base else f" ({ft / fb - 1:+.1%})"))
                for k in shown:  # (a kernel that one value does not launch: nan, and no ratio)
                    kt = med[v].get(k, float("nan"))
                    kb = med[base].get(k, float("nan"))
                    krel = "" if v == base or kt != kt or kb != kb else f" ({kt / kb - 1:+.1%})"
                    print(f"            {kt:8.4f} ms{krel}  {k[:80]}")
    finally:
        if original is missing:
            delattr(module, attr)
        else:
            setattr(module, attr, original)


if __name__ == "__main__":
    main()
