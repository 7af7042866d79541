"""A/B of the forward's chunking on few-chain (early publish) shapes: the same call run with chunk_size 256, 128
and 64 (the result depends on the chunking by rounding only), alternating, several rounds, 2.7B mixer shape, bf16.
Per workload and chunk: the GPU time alone (a CUDA graph of the launch, medians), the configuration picked
(publish mode, chunks a program, programs), and the error of y against the float64 chunked reference (small shapes).

    PYTHONPATH=. python benchmarks/ab_fwd_chunk.py [ROUNDS] [--workloads 1x2048,1x4096,...] [--chunks 256,128,64]
"""

import argparse
import statistics

from triton.testing import do_bench_cudagraph

from flashssm.bench.workloads import SSDWorkload
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import forward
from flashssm.ops.ssd.reference import ssd_scan_chunked


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", nargs="?", type=int, default=3)
    ap.add_argument("--workloads", default="1x2048,1x4096,2x2048,1x8192,1x32768")
    ap.add_argument("--chunks", default="256,128,64")
    ap.add_argument("--error-max", type=int, default=8192, help="float64 error up to this many tokens")
    a = ap.parse_args()
    chunks = [int(c) for c in a.chunks.split(",")]
    for spec in a.workloads.split(","):
        batch, seqlen = (int(v) for v in spec.split("x"))
        inp = SSDWorkload(spec, batch, seqlen).make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        runs, desc = {}, {}
        for q in chunks:
            dims = check_ssd_scan(x, dt, A, B, C, chunk_size=q)
            cfg = forward.pick_config(dims, x.dtype, x.device)
            rows = forward._chunk_rows(dims, q * cfg.group)
            desc[q] = (f"{'early' if cfg.early_publish else 'late'} g{cfg.group} "
                       f"{rows * dims.nheads * -(-dims.headdim // cfg.block_p)} progs")
            runs[q] = (lambda d=dims, c=cfg: forward.launch(d, x, dt, A, B, C, config=c)[0])
        times = {q: [] for q in chunks}
        for _ in range(a.rounds):
            for q in chunks:
                times[q].append(do_bench_cudagraph(runs[q], rep=100, return_mode="median"))
        errs = {}
        if batch * seqlen <= a.error_max:
            ref = ssd_scan_chunked(*(t.double() for t in (x, dt, A, B, C)), chunk_size=256)
            ref = ref[0] if isinstance(ref, tuple) else ref
            for q in chunks:
                y = runs[q]().double()
                errs[q] = ((y - ref).norm() / ref.norm()).item()
        base = statistics.median(times[chunks[0]])
        parts = []
        for q in chunks:
            t = statistics.median(times[q])
            err = f" err {errs[q]:.3e}" if q in errs else ""
            parts.append(f"q{q} {t * 1e3:.1f} us ({t / base - 1:+.1%}; {desc[q]}){err}")
        print(f"{spec}: " + " | ".join(parts), flush=True)


if __name__ == "__main__":
    main()
