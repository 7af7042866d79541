"""A/B of the host path of small ssd_scan calls: switch settings alternated in one process, host time and do_bench.

    PYTHONPATH=. python3 benchmarks/ab_host_path.py [--workload 1x2K ...] [--rounds 5] [--calls 300] [--options]
        [--setting NAME=MODULE.ATTR=VALUE,MODULE.ATTR=VALUE ...]

A setting is a named set of module switches (Python literals). By default three settings of flashssm._runtime:
`runner` (PREPARED and LAUNCHER_DIRECT off: every direct launch through CompiledKernel[grid], every call its whole
Python path), `launcher` (LAUNCHER_DIRECT on: the launcher called directly where no launch hook is set) and
`prepared` (both on: a call whose signature was recorded replays its allocations and launches). Per workload
(2.7B mixer shape, bf16; --options adds D, dt_bias and softplus) and call (the forward alone without gradients, and
the training call, forward and backward through autograd), medians over rounds of:
- host: microseconds of wall time a call over `calls` calls issued back to back without synchronising (the rate the
  host enqueues them; the GPU keeps up when the call is host-bound);
- bench: do_bench's median in milliseconds (what `flashssm bench` reports: L2 flushed before each call).
The forward's outputs under every setting are compared bit for bit with the first setting's.
"""

import argparse
import ast
import importlib
import statistics
import time

import torch
from triton.testing import do_bench

from benchmarks.train_harness import forward_call, training_call

DEFAULT_SETTINGS = [
    "runner=flashssm._runtime.PREPARED=False,flashssm._runtime.LAUNCHER_DIRECT=False",
    "launcher=flashssm._runtime.PREPARED=False,flashssm._runtime.LAUNCHER_DIRECT=True",
    "prepared=flashssm._runtime.PREPARED=True,flashssm._runtime.LAUNCHER_DIRECT=True",
]


def parse_setting(text: str):
    name, _, body = text.partition("=")
    switches = []
    for item in body.split(","):
        target, literal = item.rsplit("=", 1)
        module, attr = target.rsplit(".", 1)
        switches.append((importlib.import_module(module), attr, ast.literal_eval(literal)))
    return name, switches


def host_us(fn, calls: int) -> float:
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - t
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append", help="BATCHxSEQLEN, K = 1024 tokens (default 1x2K, 1x8K)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--options", action="store_true")
    parser.add_argument("--no-train", action="store_true", help="the forward alone")
    parser.add_argument("--setting", action="append", metavar="NAME=MODULE.ATTR=VALUE,...")
    a = parser.parse_args()
    settings = [parse_setting(s) for s in (a.setting or DEFAULT_SETTINGS)]
    originals = {(m, attr): getattr(m, attr) for _, sw in settings for m, attr, _ in sw}

    def apply(switches):
        for module, attr, value in switches:
            setattr(module, attr, value)

    try:
        for spec in a.workload or ["1x2K", "1x8K"]:
            calls = {"forward": forward_call(spec, a.options)}
            if not a.no_train:
                calls["training"] = training_call(spec, a.options)[0]
            first = {}
            for name, switches in settings:  # compiled, recorded and warm before timing; the forward's bits
                apply(switches)
                for fn in calls.values():
                    for _ in range(30):
                        fn()
                y = calls["forward"]()
                first.setdefault("y", y)
                same = torch.equal(y, first["y"])
                print(f"{spec} {name}: forward output {'the same bits as' if same else 'DIFFERS from'} "
                      f"{settings[0][0]}'s", flush=True)
            host = {(n, c): [] for n, _ in settings for c in calls}
            bench = {(n, c): [] for n, _ in settings for c in calls}
            for _ in range(a.rounds):
                for name, switches in settings:
                    apply(switches)
                    for c, fn in calls.items():
                        host[name, c].append(host_us(fn, a.calls))
                        bench[name, c].append(do_bench(fn, warmup=25, rep=200) * 1e3)
            opts = " (D, dt_bias, softplus)" if a.options else ""
            print(f"{spec}{opts}, medians of {a.rounds} rounds (host: us a call enqueued; bench: do_bench us)")
            for c in calls:
                base_h = statistics.median(host[settings[0][0], c])
                base_b = statistics.median(bench[settings[0][0], c])
                for name, _ in settings:
                    h, b = statistics.median(host[name, c]), statistics.median(bench[name, c])
                    print(f"  {c:<9} {name:<10} host {h:8.1f} ({h / base_h - 1:+6.1%})   "
                          f"bench {b:8.1f} ({b / base_b - 1:+6.1%})", flush=True)
    finally:
        for (module, attr), value in originals.items():
            setattr(module, attr, value)


if __name__ == "__main__":
    main()
