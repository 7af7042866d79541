"""Where a training call of ssd_scan spends its GPU time: every kernel of forward + backward through autograd (the
bench's train-* call: 2.7B mixer shape, bf16), by the torch profiler, per call, largest first, with the call's
CUDA-event time beside their sum (the rest is the GPU idling between launches); `--dtype fp16` for fp16 inputs.

    PYTHONPATH=. python3 benchmarks/train_kernel_times.py [--workload 8x4K ...] [--options]
"""

import argparse

import torch

from benchmarks.train_harness import add_dtype_argument, training_call
from benchmarks.tune_ssd_backward import kernel_times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append")
    parser.add_argument("--options", action="store_true", help="with D, dt_bias and softplus (no z)")
    add_dtype_argument(parser)
    a = parser.parse_args()
    for spec in a.workload or ["8x4K", "1x32K"]:
        step, _ = training_call(spec, a.options, dtype=a.dtype)
        times, total = kernel_times(step, calls=10)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(10):
            step()
        end.record()
        torch.cuda.synchronize()
        print(f"{spec} {a.dtype}{' (D, dt_bias, softplus)' if a.options else ''}: kernels {total:.3f} ms a call, "
              f"the call {start.elapsed_time(end) / 10:.3f} ms")
        for name, t in sorted(times.items(), key=lambda kv: -kv[1]):
            if t >= 0.001:
                print(f"  {t:8.4f} ms  {name[:90]}")


if __name__ == "__main__":
    main()
