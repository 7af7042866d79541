"""The hardware floor of a workload: fewest bytes over copy bandwidth, FLOPs over the GEMM rate.

Bytes: read x, B, C (input dtype) and dt (fp32) once, write y once.
FLOPs per token (shared/ANCHORS.md): 2·Q·N per group for C·Bᵀ within the chunk, and per head
2·Q·P for the intra-chunk product plus 4·N·P for the chunk state and the state's output.
"""

from __future__ import annotations

from dataclasses import dataclass

from flashssm.bench.workloads import DTYPES, SSDWorkload


@dataclass(frozen=True)
class Ceilings:
    copy_bytes_per_s: float   # device-to-device copy, bytes read + written
    gemm_flops_per_s: float   # bf16 8192^3 matrix product


def ssd_bytes(w: SSDWorkload) -> int:
    elt = DTYPES[w.dtype].itemsize
    per_token = 2 * w.nheads * w.headdim * elt + 2 * w.ngroups * w.dstate * elt + w.nheads * 4
    return w.tokens * per_token


def ssd_flops(w: SSDWorkload) -> int:
    q, n, p = w.chunk_size, w.dstate, w.headdim
    per_token = 2 * q * n * w.ngroups + w.nheads * (2 * q * p + 4 * n * p)
    return w.tokens * per_token


def ssd_floor_s(w: SSDWorkload, ceilings: Ceilings) -> tuple[float, str]:
    """The floor in seconds and which term sets it ('memory' or 'compute')."""
    mem = ssd_bytes(w) / ceilings.copy_bytes_per_s
    comp = ssd_flops(w) / ceilings.gemm_flops_per_s
    return (mem, "memory") if mem >= comp else (comp, "compute")
