"""What a first training call costs, compile included, with the backward's kernels compiled ahead (beside the forward's,
`_runtime.plan_ahead`) and without.

Each (workload, setting) runs in a fresh process with an empty Triton cache directory of its own, so that every kernel
compiles: the figure is what a user meets on the first step of a new shape. Per run: the first call (forward +
backward + synchronise, wall clock), the second call, the background compiles' counts, and the first call's
gradients against the second's (the same kernels: equal up to the float atomics' order).

    PYTHONPATH=. python benchmarks/first_call.py [--settings on,off] WORKLOAD ...   (GPU; training workloads of
    `flashssm bench`, e.g. train-2.7b-8x4K m1train-2.8b-8x2K)
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def child(name: str) -> dict:
    import torch

    from flashssm import _runtime
    from flashssm.bench.impls import IMPLS
    from flashssm.bench.workloads import WORKLOADS

    w = WORKLOADS[name]
    inp = w.make_inputs("cuda")
    run = IMPLS[w.op]["flashssm"].setup(w, inp)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    first = run()
    torch.cuda.synchronize()
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    second = run()
    torch.cuda.synchronize()
    t_second = time.perf_counter() - t0
    diff = max(float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))
               for a, b in zip(first, second) if a is not None)
    return {"first_s": t_first, "second_ms": 1e3 * t_second, "largest_relative_difference": diff,
            "workers": len(_runtime._workers), **_runtime.ahead_stats}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="*")
    ap.add_argument("--settings", default="on,off", help="compile-ahead settings to run, in this order")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.child)), flush=True)
        return
    print(f"{'workload':34} {'ahead':5} {'first call s':>12} {'second ms':>9} {'planned':>7} {'compiled':>8} "
          f"{'waited':>6} {'workers':>7}  first vs second", flush=True)
    for name in args.workloads:
        for setting in args.settings.split(","):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, TRITON_CACHE_DIR=cache, FLASHSSM_COMPILE_AHEAD="1" if setting == "on" else "0")
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, __file__, "--child", name], env=env, capture_output=True,
                                      text=True)
                wall = time.perf_counter() - t0
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode or not lines:
                print(f"{name:34} {setting:5} failed (rc {proc.returncode}): {proc.stderr[-800:]}", flush=True)
                continue
            r = json.loads(lines[-1][len("RESULT "):])
            print(f"{name:34} {setting:5} {r['first_s']:12.1f} {r['second_ms']:9.3f} {r['planned']:7d} "
                  f"{r['compiled']:8d} {r['waited']:6d} {r['workers']:7d}  {r['largest_relative_difference']:.1e}"
                  f"  (process {wall:.1f} s; failed {r['failed']}, planners failed {r['planner_failed']})",
                  flush=True)


if __name__ == "__main__":
    main()
