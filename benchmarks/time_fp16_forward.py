"""ssd_scan forward at 8x4K of the 2.7B shape in fp16 and bf16 (the fp16 state update rescales its
weights before the 16-bit rounding; bf16's does not): times in one run, and fp16's error against
a float64 reference at 2x1K. Run: python benchmarks/time_fp16_forward.py"""

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import reference
from flashssm.ops.ssd.forward import ssd_forward


def main():
    w = WORKLOADS["2.7b-8x4K"]
    inp = w.make_inputs("cuda")
    x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
    for dtype in (torch.bfloat16, torch.float16):
        xs, Bs, Cs = x.to(dtype), B.to(dtype), C.to(dtype)
        dims = check_ssd_scan(xs, dt, A, Bs, Cs, chunk_size=w.chunk_size)
        t = do_bench(lambda: ssd_forward(dims, xs, dt, A, Bs, Cs), warmup=25, rep=200)
        n = 2048  # 2 x 1K for the error
        sl = (slice(0, 2), slice(0, n // 2))
        small = [t_[sl].contiguous() for t_ in (xs, dt, Bs, Cs)]
        dims_s = check_ssd_scan(small[0], small[1], A, small[2], small[3], chunk_size=w.chunk_size)
        y, _ = ssd_forward(dims_s, small[0], small[1], A, small[2], small[3])
        y_ref, _ = reference.ssd_scan_chunked(small[0].double(), small[1].double(), A.double(), small[2].double(),
                                              small[3].double(), chunk_size=w.chunk_size)
        err = ((y.double() - y_ref).norm() / y_ref.norm()).item()
        print(f"{dtype}: forward 8x4K {t:.3f} ms; error vs float64 at 2x1K {err:.2e}", flush=True)


if __name__ == "__main__":
    main()
