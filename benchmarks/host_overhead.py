"""Is a small ssd_scan / selective_scan call bound by the host (Python, Triton's launch) or by the GPU?

    PYTHONPATH=. python benchmarks/host_overhead.py [--calls 200]

Per workload (the bench's inputs, no gradients):
- host: wall time per call of N calls issued back to back without synchronising (the enqueue rate;
  the GPU's queue is far from full at these N);
- gpu: CUDA-event time per call of the same N calls back to back (throughput);
- do_bench: triton.testing.do_bench's median (what `flashssm bench` reports: L2 flushed before each call);
- ours: the host time with the Triton launch replaced by a no-op (validation, configuration, allocations:
  flashssm's own Python), so host - ours is Triton's launch path. A repeated inference call of ssd_scan replays its
  prepared launches without `_runtime.launch` (`_runtime.Prepared`): there ours is the host time itself
  (FLASHSSM_PREPARED=0 for the whole path's split).
A call is host-bound when host >= gpu: the GPU then idles between kernels. train-* workloads time
forward + backward through autograd (the bench's call); their "ours" has every launch stubbed out
(torch's own small ops, the allocations and autograd still run).
`--compare` measures each workload twice: with Triton's own launch for every call (triton) and with
flashssm's direct launch of the cached compiled kernel (direct, the default; _runtime.launch).
"""

import argparse
import time

import torch
import triton

import flashssm
from flashssm.bench.workloads import WORKLOADS
from flashssm import _runtime
from flashssm.ops.selective_scan import scan as scan_module


DEVICE = "cuda"


def _sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _host_us(fn, n):
    _sync()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t) / n * 1e6
    _sync()
    return host


def _gpu_us(fn, n):
    if DEVICE != "cuda":  # (a dry run of the script on the CPU)
        return _host_us(fn, n)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n * 1e3


class _NoLaunch:
    """Stands in for a JIT kernel: indexing by a grid gives a call that does nothing; called (in place
    of _runtime.launch, for the train workloads, whose backward has several kernels), it does nothing."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: None

    def __call__(self, *args, **kwargs):
        return None


def _calls(name):
    """The call `flashssm bench` times for this workload, and where its kernel is looked up."""
    w = WORKLOADS[name]
    inp = w.make_inputs(DEVICE)
    if name.startswith("train-"):  # forward + backward through autograd, as the bench runs it
        from flashssm.bench.impls import _flashssm_fwd, _train

        return _train(_flashssm_fwd)(w, inp), (_runtime, ("launch",))
    if "u" in inp:  # a selective-scan workload
        from flashssm.bench.impls import _scan_kwargs

        kw = _scan_kwargs(inp)
        return (lambda: flashssm.selective_scan(inp["u"], inp["delta"], inp["A"], inp["B"], inp["C"], **kw)), \
            (scan_module, ("_scan_fwd_kernel", "_bc_tiles_kernel"))
    # (every launch of the forward goes through _runtime.launch: its preparation launch and the Gluon or Triton kernel)
    return (lambda: flashssm.ssd_scan(inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], chunk_size=w.chunk_size)), \
        (_runtime, ("launch",))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("-w", "--workload", action="append")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run under the interpreter (small workloads)")
    ap.add_argument("--compare", action="store_true", help="each workload with Triton's launch, then the direct one")
    ap.add_argument("--profile", type=int, default=0, help="then cProfile this many calls of each workload and "
                    "print the functions with the most own time")
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device
    names = args.workload or ["2.7b-1x2K", "2.7b-1x8K", "m1-2.8b-8x2K"]
    print(f"{'workload':<16} {'launch':<7} {'host us':>8} {'gpu us':>8} {'do_bench us':>11} {'ours us':>8}  bound")
    runs = [(n, d) for n in names for d in ((False, True) if args.compare else (_runtime.direct_launch,))]
    for name, direct in runs:
        _runtime.direct_launch = direct
        fn, (module, attrs) = _calls(name)
        for _ in range(20):
            fn()
        host = min(_host_us(fn, args.calls) for _ in range(3))
        gpu = min(_gpu_us(fn, args.calls) for _ in range(3))
        bench = triton.testing.do_bench(fn) * 1e3 if DEVICE == "cuda" else float("nan")
        kernels = {a: getattr(module, a) for a in attrs}
        for a in attrs:
            setattr(module, a, _NoLaunch())
        try:
            ours = min(_host_us(fn, args.calls) for _ in range(3))
        finally:
            for a, k in kernels.items():
                setattr(module, a, k)
        print(f"{name:<16} {'direct' if direct else 'triton':<7} {host:8.1f} {gpu:8.1f} {bench:11.1f} {ours:8.1f}  "
              f"{'host' if host >= gpu else 'gpu'}")
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.profile):
                fn()
            prof.disable()
            _sync()
            print(f"  {name}: cProfile of {args.profile} calls (times include the profiler's own cost)")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
