"""The one-tile norm backward (the 2.7B block norm: 2560 wide, no gate, x fp32 from the residual stream) with dy in
bf16 (the model's RMSNorm writing autocast's dtype) against dy in fp32, at a few warp counts.

    PYTHONPATH=. python3 benchmarks/time_norm_mixed.py

Mixed dtypes give Triton's loads of x and dy different layouts (4 fp32 or 8 bf16 elements a 16-byte vector) and a
conversion between them through shared memory (offline, sm_90: 8 KB and 11 more barriers at 8 warps, 16 KB at 16);
at 4 elements a thread (32 warps for a [1, 4096] tile) both loads take the same one, but then only two programs fit
an SM: the last lines also time 32 warps at two programs a SM (`rmsnorm.SPLITS_PER_SM`), one wave of them.
"""

import torch
from triton.testing import do_bench

from flashssm.ops.norm import rmsnorm


def main():
    rows, width = 8 * 4096, 2560
    x = torch.randn(rows, width, device="cuda")
    w = torch.randn(width, device="cuda")
    real = rmsnorm.pick_blocks
    for dy_dtype in (torch.float32, torch.bfloat16):
        dy = torch.randn(rows, width, device="cuda").to(dy_dtype)
        nbytes = x.numel() * (4 + 4 + dy.element_size())  # read x, dy; write dx (fp32)
        splits = rmsnorm.SPLITS_PER_SM
        for blocks, per_sm in ((None, splits), ((1, 4096, 16), splits), ((1, 4096, 32), splits),
                               ((2, 4096, 32), splits), ((1, 4096, 32), 2)):
            rmsnorm.pick_blocks = real if blocks is None else (lambda g, b=blocks: b)
            rmsnorm.SPLITS_PER_SM = per_sm
            try:
                t = do_bench(lambda: rmsnorm.rmsnorm_backward(x, w, None, dy, 1e-5, width, False), warmup=25,
                             rep=200, return_mode="median")
            finally:
                rmsnorm.pick_blocks, rmsnorm.SPLITS_PER_SM = real, splits
            print(f"dy {str(dy_dtype)[6:]:8s} blocks {blocks or real(width)} x {per_sm} a SM: {t * 1e3:7.1f} us, "
                  f"{nbytes / t / 1e6:5.0f} GB/s", flush=True)


if __name__ == "__main__":
    main()
