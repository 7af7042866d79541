"""A/B of the chain backward's pipeline stages (1 against 2), alternating, several rounds, on the bench's train
shapes (2.7B mixer, bf16, no options): the median of each. Run: python benchmarks/ab_chain_stages.py [ROUNDS]"""

import statistics
import sys

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import SSDWorkload
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import backward


def main(rounds=5):
    for batch, seqlen in ((1, 2048), (1, 8192), (8, 4096), (1, 32768)):
        inp = SSDWorkload("probe", batch, seqlen).make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256)
        dy = torch.randn_like(x)
        times = {1: [], 2: []}
        for _ in range(rounds):
            for stages in (1, 2):
                def run():
                    return backward.ssd_backward(dims, dy, None, x, dt, A, B, C, form="chain", num_stages=stages)
                run()
                times[stages].append(do_bench(run, warmup=10, rep=50))
        print(f"{batch}x{seqlen} backward ms, median of {rounds} (all): "
              + " | ".join(f"stages {s} {statistics.median(v):.3f} ({' '.join(f'{t:.3f}' for t in v)})"
                           for s, v in times.items()), flush=True)
        del x, dt, A, B, C, dy, inp
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
