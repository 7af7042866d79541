"""Named benchmark workloads and their inputs."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass(frozen=True)
class SSDWorkload:
    """One ssd_scan forward call: x (batch, seqlen, nheads, headdim), B/C (batch, seqlen, ngroups, dstate).

    Inputs follow mamba_ssm's tests: x, B, C ~ N(0, 1) in `dtype`, dt = softplus(N(0, 1) − 4) in
    fp32 (about 0.02), A = −exp(U(0, 1)); no D, z or dt_bias, so every peer computes the same thing.
    """

    name: str
    batch: int
    seqlen: int
    nheads: int = 80
    headdim: int = 64
    dstate: int = 128
    ngroups: int = 1
    chunk_size: int = 256
    dtype: str = "bfloat16"
    needs_gpu: bool = True

    @property
    def tokens(self) -> int:
        return self.batch * self.seqlen

    @property
    def shape(self) -> str:
        return (f"{self.batch}x{self.seqlen} h{self.nheads} p{self.headdim} n{self.dstate} g{self.ngroups} "
                f"Q{self.chunk_size} {self.dtype}")

    def as_dict(self) -> dict:
        return asdict(self)

    def make_inputs(self, device, seed: int = 0) -> dict:
        gen = torch.Generator(device=device).manual_seed(seed)
        dtype = DTYPES[self.dtype]

        def randn(*shape, dt=dtype):
            return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32).to(dt)

        b, l, h = self.batch, self.seqlen, self.nheads
        return dict(
            x=randn(b, l, h, self.headdim),
            dt=F.softplus(randn(b, l, h, dt=torch.float32) - 4.0),
            A=-torch.exp(torch.rand(h, generator=gen, device=device)),
            B=randn(b, l, self.ngroups, self.dstate),
            C=randn(b, l, self.ngroups, self.dstate),
        )


def _mamba2_27b(batch: int, seqlen: int) -> SSDWorkload:
    label = f"{seqlen // 1024}K" if seqlen % 1024 == 0 else str(seqlen)
    return SSDWorkload(f"2.7b-{batch}x{label}", batch, seqlen)


# Mamba-2 2.7B's mixer: d_model 2560, expand 2 -> 5120 channels = 80 heads of 64, dstate 128, 1 group.
WORKLOADS: dict[str, SSDWorkload] = {
    w.name: w for w in [
        _mamba2_27b(1, 2048),
        _mamba2_27b(1, 8192),
        _mamba2_27b(1, 32768),
        _mamba2_27b(1, 131072),
        _mamba2_27b(8, 4096),
        _mamba2_27b(32, 2048),
        # ANCHORS.md's accuracy table: batch 2, seqlen 1024, 16 heads
        SSDWorkload("accuracy-2x1K", 2, 1024, nheads=16),
        # Small enough for the Triton interpreter; fp32 since the interpreter's bf16 dots are wrong.
        SSDWorkload("cpu-small", 2, 200, nheads=4, headdim=32, dstate=16, ngroups=2, chunk_size=64,
                    dtype="float32", needs_gpu=False),
    ]
}

GPU_DEFAULT = [name for name, w in WORKLOADS.items() if w.needs_gpu]
CPU_DEFAULT = [name for name, w in WORKLOADS.items() if not w.needs_gpu]
