"""The hardware floor of a workload: fewest bytes over copy bandwidth, FLOPs over the GEMM rate.

Each workload counts its own bytes and FLOPs (`Workload.bytes()`, `.flops()`); for the SSD scan:
read x, B, C (input dtype) and dt (fp32) once, write y once; FLOPs per token (shared/ANCHORS.md)
2·Q·N per group for C·Bᵀ within the chunk, and per head 2·Q·P for the intra-chunk product plus
4·N·P for the chunk state and the state's output. The steps, the conv and the norm are pure
bandwidth: their floor is their bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from flashssm.bench.workloads import Workload


@dataclass(frozen=True)
class Ceilings:
    copy_bytes_per_s: float   # device-to-device copy, bytes read + written
    gemm_flops_per_s: float   # bf16 8192^3 matrix product


def floor_s(w: Workload, ceilings: Ceilings) -> tuple[float, str]:
    """The floor in seconds and which term sets it ('memory' or 'compute')."""
    mem = w.bytes() / ceilings.copy_bytes_per_s
    comp = w.flops() / ceilings.gemm_flops_per_s
    return (mem, "memory") if mem >= comp else (comp, "compute")

