"""A prepared call's replay, step by step: the host time of each allocation, torch call and launch of every plan a
workload's calls replay, on the GPU.

    PYTHONPATH=. python3 benchmarks/replay_steps.py [-w train-2.7b-1x2K] [--calls 300]

Each step's callable is wrapped by a timer in place (allocations and torch calls: the function the step calls;
launches: `_runtime._run_compiled`, the compiled kernel's launcher, keyed by the kernel), and each plan's whole replay
is timed too; what the replay's own loop adds (argument lists, addresses, alignment checks, frees) is the whole less
the steps. Medians over the calls, microseconds.
"""

import argparse
import statistics
import time

import torch

from flashssm import _runtime
from flashssm.bench.impls import IMPLS
from flashssm.bench.workloads import WORKLOADS


def timer(name, fn, log):
    """fn, timed: each call's wall time on the host appended to log[name] (seconds)."""
    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            log.setdefault(name, []).append(time.perf_counter() - t)
    return timed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-w", "--workload", action="append")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the tool under the interpreter (cpu-* rows)")
    args = ap.parse_args()
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    for name in args.workload or ["train-2.7b-1x2K"]:
        w = WORKLOADS[name]
        inp = w.make_inputs(args.device)
        fn = IMPLS[w.op]["flashssm"].setup(w, inp)
        for _ in range(5):
            fn()
        sync()
        log = {}
        saved_steps = {}
        for k, (key, plan) in enumerate(list(_runtime._prepared.items())):
            if plan is None:
                continue
            saved_steps[key] = plan.steps
            steps = []
            for j, (step, frees) in enumerate(plan.steps):
                label = f"plan {k} step {j:2d}"
                if step[0] == _runtime._ALLOC:
                    step = (step[0], timer(f"{label} alloc {getattr(step[1], '__name__', step[1])}", step[1], log),
                            *step[2:])
                elif step[0] == _runtime._OP:
                    step = (step[0], timer(f"{label} op {getattr(step[1], '__name__', step[1])}", step[1], log),
                            *step[2:])
                steps.append((step, frees))
            plan.steps = tuple(steps)
        run_compiled, replay = _runtime._run_compiled, _runtime.Prepared._replay

        def launch(compiled, *a):
            t = time.perf_counter()
            try:
                return run_compiled(compiled, *a)
            finally:
                log.setdefault(f"launch {compiled.name}", []).append(time.perf_counter() - t)

        def whole(self, flat):
            t = time.perf_counter()
            try:
                return replay(self, flat)
            finally:
                log.setdefault(f"replay of {len(self.steps)} steps", []).append(time.perf_counter() - t)

        _runtime._run_compiled, _runtime.Prepared._replay = launch, whole
        try:
            for i in range(args.calls + 10):
                if i == 10:
                    log.clear()
                fn()
            sync()
        finally:
            _runtime._run_compiled, _runtime.Prepared._replay = run_compiled, replay
            for key, steps in saved_steps.items():
                _runtime._prepared[key].steps = steps
        print(f"{name}: host us, medians of {args.calls} calls")
        for label in sorted(log):
            print(f"  {statistics.median(log[label]) * 1e6:8.1f}  x{len(log[label]) // args.calls}  {label}")


if __name__ == "__main__":
    main()
