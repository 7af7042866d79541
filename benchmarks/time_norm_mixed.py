"""The one-tile norm backward (the 2.7B block norm: 2560 wide, no gate, x fp32 from the residual stream) with dy in
bf16 (the model's RMSNorm writing autocast's dtype) against dy in fp32, at a few warp counts.

    PYTHONPATH=. python3 benchmarks/time_norm_mixed.py

Mixed dtypes give Triton's loads of x and dy different layouts (4 fp32 or 8 bf16 elements a 16-byte vector) and a
conversion between them; at 4 elements a thread both loads take the same one.
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
        for blocks in (None, (1, 4096, 16), (1, 4096, 32), (2, 4096, 32)):
            rmsnorm.pick_blocks = real if blocks is None else (lambda g, b=blocks: b)
            try:
                t = do_bench(lambda: rmsnorm.rmsnorm_backward(x, w, None, dy, 1e-5, width, False), warmup=25,
                             rep=200, return_mode="median")
            finally:
                rmsnorm.pick_blocks = real
            print(f"dy {str(dy_dtype)[6:]:8s} blocks {blocks or real(width)}: {t * 1e3:7.1f} us, "
                  f"{nbytes / t / 1e6:5.0f} GB/s", flush=True)


if __name__ == "__main__":
    main()
