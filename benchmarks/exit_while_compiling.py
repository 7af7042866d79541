"""Does a process exit cleanly while the background thread of compile-ahead (`_runtime.plan_ahead`) is compiling?

A training forward queues its backward's kernels for a daemon thread. A script that runs one forward and ends (a smoke
test, a notebook cell's process, an exception after the forward) exits with that thread inside Triton's compiler: in
MLIR's passes (C++, Python's lock released) or in a ptxas subprocess. Each run here is a fresh process with an empty
Triton cache: one training forward of a workload, then the end of the script (a normal return, `sys.exit`, or an
uncaught exception), with the thread's state printed just before. The parent reports the exit status, the time from
the forward's end to the process's end, and the end of stderr.

    PYTHONPATH=. python benchmarks/exit_while_compiling.py WORKLOAD[:ENDING] ...   (GPU; ENDING: return, exit, raise;
    the workloads of benchmarks/first_call.py)
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def child(name: str, ending: str) -> None:
    import torch

    from flashssm import _runtime
    from flashssm.bench.impls import flashssm_training_forward
    from flashssm.bench.workloads import WORKLOADS

    w = WORKLOADS[name]
    inp = w.make_inputs("cuda")
    forward, names = flashssm_training_forward(w, inp)
    leaves = [inp[k].detach().clone().requires_grad_() for k in names]
    t0 = time.perf_counter()
    forward(*leaves)
    torch.cuda.synchronize()
    state = {"forward_s": time.perf_counter() - t0, "pending": len(_runtime._pending), **_runtime.ahead_stats,
             "end": time.time()}
    print("STATE " + json.dumps(state), flush=True)
    if ending == "exit":
        sys.exit(0)
    if ending == "raise":
        raise RuntimeError("the script's own error after the forward")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="*", help="WORKLOAD[:ENDING]")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        name, _, ending = args.child.partition(":")
        child(name, ending or "return")
        return
    for run in args.runs:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, TRITON_CACHE_DIR=cache)
            proc = subprocess.run([sys.executable, __file__, "--child", run], env=env, capture_output=True, text=True)
            ended = time.time()
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("STATE ")]
        state = json.loads(lines[-1][6:]) if lines else {}
        tail = " | ".join(proc.stderr.strip().splitlines()[-4:])
        after = f"{ended - state['end']:.1f} s" if state else "-"
        print(f"{run:36} rc {proc.returncode:4d}  forward {state.get('forward_s', float('nan')):5.1f} s  "
              f"queued at the end {state.get('pending', '-')}, compiled {state.get('compiled', '-')}  "
              f"exit took {after}  stderr: {tail[-600:]}", flush=True)


if __name__ == "__main__":
    main()
