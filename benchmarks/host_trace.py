"""Where a small training call's time goes, host against GPU: a torch-profiler trace of a few back-to-back training
calls of ssd_scan (the bench's train-* call), with the GPU's busy time, its idle gaps and the host's ops.

    PYTHONPATH=. python3 benchmarks/host_trace.py [--workload 1x2K ...] [--options] [--calls 5] [--trace DIR]

Per workload: the calls' wall time, the GPU's busy time in that window (union of kernel and memset intervals) and so
its idle share; the last call's GPU activities in order, each with its start (from the first host event) and
duration, where the gaps between them show the GPU waiting; and the host ops with the most own time. `--trace DIR`
also writes the Chrome trace (open in chrome://tracing or Perfetto), whose host rows give each launch's time.
"""

import argparse
import os

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.train_harness import training_call


def _union(intervals):
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append")
    parser.add_argument("--options", action="store_true", help="with D, dt_bias and softplus (no z)")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--trace", default=None, help="a folder for the Chrome traces")
    a = parser.parse_args()
    for spec in a.workload or ["1x2K", "1x8K"]:
        step, _ = training_call(spec, a.options)
        for _ in range(10):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(a.calls):
                step()
            torch.cuda.synchronize()
        events = prof.events()
        gpu = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
        host = [e for e in events if e.device_type == torch.autograd.DeviceType.CPU]
        t0 = min(e.time_range.start for e in host)
        t1 = max(max(e.time_range.end for e in host), max(e.time_range.end for e in gpu))
        busy = _union([(e.time_range.start, e.time_range.end) for e in gpu])
        wall = (t1 - t0) / a.calls
        print(f"{spec}{' (D, dt_bias, softplus)' if a.options else ''}: {a.calls} calls, {wall:.1f} us a call of "
              f"wall time, the GPU busy {busy / a.calls:.1f} us a call ({100 * busy / (t1 - t0):.0f} %), "
              f"{len(gpu) / a.calls:.0f} GPU activities a call")
        print("  GPU activities of the last call (start after the first host event, us; duration; name):")
        per_call = len(gpu) // a.calls
        for e in sorted(gpu, key=lambda e: e.time_range.start)[-per_call:]:
            print(f"    {e.time_range.start - t0:10.1f} {e.time_range.end - e.time_range.start:8.1f}  {e.name[:80]}")
        own = {}
        for e in host:
            own[e.name] = own.get(e.name, 0.0) + e.self_cpu_time_total
        print("  host ops by own time, us a call:")
        for name, t in sorted(own.items(), key=lambda kv: -kv[1])[:25]:
            print(f"    {t / a.calls:8.1f}  {name[:90]}")
        if a.trace:
            os.makedirs(a.trace, exist_ok=True)
            prof.export_chrome_trace(os.path.join(a.trace, f"trace-{spec}{'-opts' if a.options else ''}.json"))


if __name__ == "__main__":
    main()
