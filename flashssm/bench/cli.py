"""`flashssm bench`: time ssd_scan against its peers and the hardware floor."""

from __future__ import annotations

import argparse
import os
import sys

from flashssm.bench.impls import IMPL_NAMES, IMPLS
from flashssm.bench.workloads import CPU_DEFAULT, GPU_DEFAULT, WORKLOADS

DESCRIPTION = """\
Time flashssm's kernels on named workloads (the SSD scan forward, the decoding steps, causal
conv1d, gated RMSNorm) against flashssm's PyTorch references, plain PyTorch and torch.compile,
and the peers found installed (mamba_ssm, fla), next to the hardware floor measured in the same
run (device copy bandwidth and bf16 GEMM rate).

Every implementation is first checked against a float64 reference on the same inputs (relative
error, share of elements within 1e-3 and 1%, NaNs); a result that fails the check is timed but
never compared. Times are medians of triton.testing.do_bench (L2 flushed before each call).

With no GPU, the small CPU workload runs through the Triton interpreter and the references:
that checks the harness, and the times say nothing about speed.

`flashssm bench model` times whole models instead (prefill, decoding, training) against mamba_ssm
and transformers; `flashssm bench model -h` lists its scenarios.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-w", "--workload", action="append", metavar="NAME",
                        help="a workload to run (repeatable); default: every GPU workload on a GPU, "
                             "the small CPU ones without one; --list shows them")
    parser.add_argument("-i", "--impl", action="append", metavar="NAME",
                        help=f"an implementation to run (repeatable): {', '.join(IMPL_NAMES)}; default: every "
                             "one registered for each workload's operation (on the CPU: the kernels and references)")
    parser.add_argument("--json", metavar="PATH", help="also write every figure, with the device and versions, as JSON")
    parser.add_argument("--plot", metavar="PATH",
                        help="also plot time and fraction of the floor against seqlen (PNG; needs matplotlib)")
    parser.add_argument("--warmup", type=float, default=25, metavar="MS", help="warm-up per timing, ms (default 25)")
    parser.add_argument("--rep", type=float, default=100, metavar="MS",
                        help="time spent repeating each timing, ms (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--list", action="store_true", help="list workloads and implementations, then exit")
    parser.set_defaults(func=main)


class _Progress:
    """A tqdm bar on stderr (when tqdm is installed and stderr is a terminal), else one line a run."""

    def __init__(self, total: int):
        self.total, self.count = total, 0
        try:
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=sys.stderr, unit="run", dynamic_ncols=True, disable=None)
        except ImportError:
            self.bar = None

    def start(self, what: str) -> None:
        self.count += 1
        if self.bar is None:
            print(f"[{self.count}/{self.total}] {what}", file=sys.stderr, flush=True)
        else:
            self.bar.set_description(what)

    def done(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def main(args: argparse.Namespace) -> int:
    import torch

    if args.list:
        for name, w in WORKLOADS.items():
            print(f"{name:22s} {w.op:20s} {w.shape}{'' if w.needs_gpu else '  (CPU)'}")
        for op, impls in IMPLS.items():
            for name, impl in impls.items():
                print(f"{op:20s} {name:22s} {impl.description}")
        return 0
    has_gpu = torch.cuda.is_available()
    if not has_gpu:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before any kernel module is imported
    device = torch.device("cuda" if has_gpu else "cpu")
    names = args.workload or (GPU_DEFAULT if has_gpu else CPU_DEFAULT)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        print(f"unknown workload(s) {unknown}; known: {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    if not has_gpu and any(WORKLOADS[n].needs_gpu for n in names):
        print(f"those workloads need a GPU; without one only {', '.join(CPU_DEFAULT)} run", file=sys.stderr)
        return 2
    impls = args.impl or [n for n in IMPL_NAMES if has_gpu or any(n in i and i[n].on_cpu for i in IMPLS.values())]
    unknown = [n for n in impls if n not in IMPL_NAMES]
    if unknown:
        print(f"unknown implementation(s) {unknown}; known: {', '.join(IMPL_NAMES)}", file=sys.stderr)
        return 2
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("--plot needs matplotlib: pip install 'flashssm[bench]'", file=sys.stderr)
            return 2
    if not has_gpu:
        print("No CUDA GPU here: running the small CPU workloads through the Triton interpreter and the "
              "references. That checks the harness; timings need a GPU.", file=sys.stderr)

    from flashssm.bench.report import format_header, format_workload, write_json, write_plot
    from flashssm.bench.run import run_benchmark

    progress = _Progress(sum(len([i for i in impls if i in IMPLS[WORKLOADS[n].op]]) for n in names))

    def show(text: str) -> None:
        if progress.bar is not None:
            progress.bar.write(text, file=sys.stdout)
        else:
            print(text, flush=True)

    try:
        run = run_benchmark([WORKLOADS[n] for n in names], impls, device, warmup_ms=args.warmup,
                            rep_ms=args.rep, seed=args.seed, progress=progress,
                            on_start=lambda run: show(format_header(run)),
                            on_workload=lambda run, wr: show(format_workload(run, wr)))
    finally:
        progress.close()
    if args.json:
        write_json(run, args.json)
    if args.plot:
        write_plot(run, args.plot)
    return 0
