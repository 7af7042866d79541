"""Where the v1 backward's time goes (2.7B shape, bf16): the gradient launch with every output,
without dB/dC (no float atomics), without dx/ddt, and an atomic-add microbenchmark (fp32 red of
[16, 128] tiles into a (tokens, 128) buffer, the v1 pattern) against plain stores of the same tiles.
Run: python benchmarks/probe_ssd_backward.py"""

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd.backward import ssd_backward
from flashssm.ops.ssd.forward import entering_states


@triton.jit
def _tiles(buf, n_tok, reps, ROWS: tl.constexpr, N: tl.constexpr, ATOMIC: tl.constexpr):
    pid = tl.program_id(0)
    t = pid * ROWS + tl.arange(0, ROWS)
    n = tl.arange(0, N)
    ptrs = buf + t[:, None].to(tl.int64) * N + n[None, :]
    val = (t[:, None] + n[None, :]).to(tl.float32)
    for _ in range(reps):
        if ATOMIC:
            tl.atomic_add(ptrs, val, sem="relaxed")
        else:
            tl.store(ptrs, val)


def main():
    n_tok = 32768
    buf = torch.zeros(n_tok, 128, device="cuda")
    for rows in (16, 64):
        for atomic in (False, True):
            reps = 80
            t = do_bench(lambda: _tiles[(n_tok // rows,)](buf, n_tok, reps, ROWS=rows, N=128, ATOMIC=atomic,
                                                           num_warps=4), warmup=5, rep=30)
            ops = n_tok * 128 * reps
            print(f"tiles [{rows},128] x{reps} {'atomic' if atomic else 'store '}: {t:.3f} ms, "
                  f"{ops / t / 1e6:.1f} G elem-ops/s", flush=True)
    for name in ("2.7b-8x4K", "2.7b-1x2K"):
        w = WORKLOADS[name]
        inp = w.make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        dims = check_ssd_scan(x, dt, A, B, C, chunk_size=w.chunk_size)
        dy = torch.randn_like(x)
        t_states = do_bench(lambda: entering_states(dims, x, dt, A, B), warmup=10, rep=50)
        print(f"{name}: states {t_states:.3f} ms")
        variants = {"all": None, "no dB/dC": [True, True, True, False, False, True, True, True, True],
                    "only dB/dC": [False, False, False, True, True, False, False, False, False],
                    "only dx": [True, False, False, False, False, False, False, False, False]}
        for label, needs in variants.items():
            t = do_bench(lambda: ssd_backward(dims, dy, None, x, dt, A, B, C, needs=needs), warmup=5, rep=30)
            print(f"  backward {label}: {t:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
