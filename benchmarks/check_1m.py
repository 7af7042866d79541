"""The 1x1M-token check of the fused SSD forward: 2.7B shape, bf16, past 2^31 elements.

    PYTHONPATH=. python3 benchmarks/check_1m.py [--tokens N]

x has 1M x 80 x 64 = 5.4e9 elements, so every offset past 2^31 must be 64-bit. The reference
(chunked, float64) runs in pieces of 64K tokens, each starting from the state the previous one
ended with; chunk boundaries fall at the same tokens as in the kernel.
"""

import argparse

import torch

import flashssm
from flashssm.bench.workloads import SSDWorkload
from flashssm.ops.ssd.reference import ssd_scan_chunked


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=1 << 20)
    parser.add_argument("--piece", type=int, default=1 << 16)
    args = parser.parse_args()
    w = SSDWorkload("1M", 1, args.tokens)
    inp = w.make_inputs("cuda", seed=3)
    D = torch.randn(80, device="cuda")
    y, final = flashssm.ssd_scan(**inp, chunk_size=256, D=D, return_final_states=True)
    torch.cuda.synchronize()
    print(f"x elements {inp['x'].numel():,} (2^31 = {2**31:,}); kernel done", flush=True)
    state = None
    num = den = 0.0
    worst = 0.0
    for start in range(0, args.tokens, args.piece):
        sl = slice(start, start + args.piece)
        piece = {k: (v[:, sl].double() if k in ("x", "dt", "B", "C") else v.double()) for k, v in inp.items()}
        y_ref, state = ssd_scan_chunked(**piece, D=D.double(), chunk_size=256, initial_states=state)
        diff = (y[:, sl].double() - y_ref)
        num += float(diff.pow(2).sum())
        den += float(y_ref.pow(2).sum())
        worst = max(worst, float((diff.norm() / y_ref.norm())))
        del piece, y_ref, diff
    rel = (num / den) ** 0.5
    rel_final = float((final.double() - state).norm() / state.norm())
    nan = int(torch.isnan(y).sum())
    print(f"1x{args.tokens} tokens: y rel err {rel:.3e} (worst 64K piece {worst:.3e}), final state rel err "
          f"{rel_final:.3e}, NaN {nan}")
    assert nan == 0 and rel < 1e-2 and rel_final < 1e-2


if __name__ == "__main__":
    main()
