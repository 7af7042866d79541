"""Time the parts of ssd_scan's backward on the GPU: the state recompute launch alone, the whole
backward (recompute + gradient launch + sums) in each variant (tf32 or 16-bit operands, early or
late hand-over, atomics or deterministic), against the forward. The 2.7B mixer shape, bf16.
Run: python benchmarks/tune_ssd_backward.py   (writes nothing; the table goes to stdout)"""

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd.backward import ssd_backward
from flashssm.ops.ssd.forward import entering_states, ssd_forward


def main():
    from flashssm.ops.ssd import backward

    for name in ("2.7b-8x4K", "2.7b-1x32K", "2.7b-1x2K"):
        w = WORKLOADS[name]
        inp = w.make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        dims = check_ssd_scan(x, dt, A, B, C, chunk_size=w.chunk_size)
        dy = torch.randn_like(x)
        t_fwd = do_bench(lambda: ssd_forward(dims, x, dt, A, B, C), warmup=25, rep=100)
        t_states = do_bench(lambda: entering_states(dims, x, dt, A, B), warmup=25, rep=100)
        print(f"{name}: forward {t_fwd:.3f} ms, state recompute {t_states:.3f} ms", flush=True)
        ref = None
        for tf32 in (True, False):
            for num_warps in (4, 8):
                for sub in (16, 32, 64):
                    def run():
                        return ssd_backward(dims, dy, None, x, dt, A, B, C, tf32_grads=tf32, sub=sub,
                                            num_warps=num_warps)
                    try:
                        g = run()
                        t = do_bench(run, warmup=10, rep=50)
                    except Exception as err:
                        print(f"  tf32={tf32} warps={num_warps} sub={sub}: {type(err).__name__}: {err}"[:200])
                        continue
                    k = backward.last_compiled
                    if ref is None:
                        ref = g
                    diff = max(((a.float() - b.float()).norm() / b.float().norm()).item()
                               for a, b in zip(g, ref) if a is not None)
                    print(f"  tf32={tf32!s:5} warps={num_warps} sub={sub:2d}: backward {t:.3f} ms "
                          f"(fwd+bwd {t + t_fwd:.3f}) regs {k.n_regs} spills {k.n_spills} smem {k.metadata.shared}; "
                          f"rel diff to the first {diff:.1e}", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
