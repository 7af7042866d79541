"""The implementations a benchmark compares: flashssm's kernel and references, and the peers.

Each `setup` takes a workload and its inputs and returns a function of no arguments that runs
the forward and returns y (batch, seqlen, nheads, headdim), or raises `Unavailable` with the
reason. Peers are found at run time and are never required.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from dataclasses import dataclass
from typing import Callable

import torch

from flashssm.bench.workloads import SSDWorkload


class Unavailable(Exception):
    """The implementation cannot run here; the message says why."""


@dataclass(frozen=True)
class Impl:
    name: str
    is_peer: bool
    description: str
    setup: Callable[[SSDWorkload, dict], Callable[[], torch.Tensor]]


def _flashssm(state_dtype):
    def setup(w: SSDWorkload, inp: dict):
        import flashssm
        from flashssm.ops import ssd

        if not ssd.kernel_available(inp["x"], w.dstate):
            raise Unavailable("no flashssm Triton kernel for this device and shape (ssd_scan would run the reference)")
        return lambda: flashssm.ssd_scan(inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], chunk_size=w.chunk_size,
                                         state_dtype=state_dtype)
    return setup


def _reference(compile: bool):
    def setup(w: SSDWorkload, inp: dict):
        from flashssm.ops.ssd.reference import ssd_scan_chunked

        return lambda: ssd_scan_chunked(inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], chunk_size=w.chunk_size,
                                        compile=compile)[0]
    return setup


def import_mamba_ssm():
    """mamba_ssm's Triton SSD entry point, or Unavailable.

    Its package __init__ imports the CUDA extension `selective_scan_cuda` and optional kernels
    that a pure-Python install lacks, so the extension gets an empty stand-in and, if the package
    still fails to import, only the Triton submodules are loaded (a bare package module).
    """
    spec = importlib.util.find_spec("mamba_ssm")
    if spec is None:
        raise Unavailable("mamba_ssm is not installed")
    sys.modules.setdefault("selective_scan_cuda", types.ModuleType("selective_scan_cuda"))
    try:
        from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
    except Exception:
        for name in [m for m in sys.modules if m == "mamba_ssm" or m.startswith("mamba_ssm.")]:
            del sys.modules[name]
        package = types.ModuleType("mamba_ssm")
        package.__path__ = list(spec.submodule_search_locations or [])
        sys.modules["mamba_ssm"] = package
        try:
            module = importlib.import_module("mamba_ssm.ops.triton.ssd_combined")
        except Exception as err:
            raise Unavailable(f"mamba_ssm's Triton SSD does not import: {err}") from None
        mamba_chunk_scan_combined = module.mamba_chunk_scan_combined
    return mamba_chunk_scan_combined


def _mamba_ssm(w: SSDWorkload, inp: dict):
    if not inp["x"].is_cuda:
        raise Unavailable("mamba_ssm's Triton kernels need a CUDA GPU")
    fn = import_mamba_ssm()
    return lambda: fn(inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], chunk_size=w.chunk_size)


def _fla(w: SSDWorkload, inp: dict):
    """fla's chunk_simple_gla computes the same scan with q = C, k = B (per head), v = x·dt, g = dt·A.

    The per-head expansion of B and C and the products x·dt and dt·A are prepared outside the
    timed call, which flatters fla slightly.
    """
    if not inp["x"].is_cuda:
        raise Unavailable("fla's Triton kernels need a CUDA GPU")
    try:
        from fla.ops.simple_gla import chunk_simple_gla
    except Exception as err:
        raise Unavailable(f"fla is not importable: {err}") from None
    heads_per_group = w.nheads // w.ngroups
    q = inp["C"].repeat_interleave(heads_per_group, dim=2).contiguous()
    k = inp["B"].repeat_interleave(heads_per_group, dim=2).contiguous()
    v = (inp["x"].float() * inp["dt"][..., None]).to(inp["x"].dtype)
    g = (inp["dt"] * inp["A"]).float()
    return lambda: chunk_simple_gla(q, k, v, g=g, scale=1.0)[0]


IMPLS: dict[str, Impl] = {
    impl.name: impl for impl in [
        Impl("flashssm", False, "flashssm.ssd_scan, the fused Triton kernel, fp32 states", _flashssm(None)),
        Impl("flashssm-fp16-states", False, "the same with state_dtype=torch.float16", _flashssm(torch.float16)),
        Impl("reference", False, "flashssm's chunked PyTorch reference, eager, fp32", _reference(False)),
        Impl("reference-compiled", False, "the same, per-chunk part through torch.compile", _reference(True)),
        Impl("mamba_ssm", True, "mamba_ssm mamba_chunk_scan_combined (5 Triton kernels)", _mamba_ssm),
        Impl("fla", True, "fla chunk_simple_gla (B, C expanded per head)", _fla),
    ]
}
PEERS = [name for name, impl in IMPLS.items() if impl.is_peer]
