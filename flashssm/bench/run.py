"""Run workloads × implementations: accuracy against float64 first, then the timing."""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from importlib import metadata

import torch

from flashssm.bench.floors import Ceilings, floor_s
from flashssm.bench.impls import IMPLS, Unavailable
from flashssm.bench.measure import Accuracy, accuracy, measure_ceilings, time_ms
from flashssm.bench.workloads import DTYPES, Workload


@dataclass
class Result:
    impl: str
    status: str                 # ok | inaccurate | unavailable | error
    note: str = ""
    time_ms: float | None = None
    accuracy: Accuracy | None = None
    host_us: float | None = None  # steps: Python + launch time per call, measured on the host
    extra_mb: float | None = None  # training: peak memory of one call above what was allocated before it

    @property
    def verified(self) -> bool:
        """Timed and accurate: the only results whose speed is compared."""
        return self.status == "ok" and self.time_ms is not None

    def as_dict(self) -> dict:
        return dict(impl=self.impl, status=self.status, note=self.note, time_ms=self.time_ms, host_us=self.host_us,
                    extra_mb=self.extra_mb, accuracy=self.accuracy.as_dict() if self.accuracy else None)


@dataclass
class WorkloadRun:
    workload: Workload
    floor_ms: float | None
    floor_kind: str | None
    results: list[Result] = field(default_factory=list)

    def verified_time(self, impl: str) -> float | None:
        for r in self.results:
            if r.impl == impl and r.verified:
                return r.time_ms
        return None

    def as_dict(self) -> dict:
        w = self.workload
        return dict(op=w.op, workload=w.as_dict(), bytes=w.bytes(), flops=w.flops(), floor_ms=self.floor_ms,
                    floor_kind=self.floor_kind, results=[r.as_dict() for r in self.results])


@dataclass
class BenchRun:
    device: str
    versions: dict
    ceilings: Ceilings | None
    impls: list[str]
    workloads: list[WorkloadRun] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(device=self.device, versions=self.versions,
                    ceilings=None if self.ceilings is None else vars(self.ceilings),
                    impls=self.impls, workloads=[w.as_dict() for w in self.workloads])


def versions() -> dict:
    versions = {"python": platform.python_version(), "torch": torch.__version__}
    for label, dist in (("triton", "triton"), ("mamba_ssm", "mamba_ssm"), ("fla", "fla-core")):
        try:
            versions[label] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[label] = None
    return versions


def _short(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}".replace("\n", " ")
    return text if len(text) < 160 else text[:157] + "..."


def host_us_per_call(fn, device: torch.device, calls: int = 200) -> float:
    """Wall time per call on the host while the device keeps up: Python, validation and launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return elapsed / calls * 1e6


def peak_extra_mb(fn, device: torch.device) -> float:
    """Peak memory allocated during one call above what was allocated before it (MiB): the call's
    working memory, its outputs included (torch.cuda.max_memory_allocated)."""
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    out = fn()
    torch.cuda.synchronize(device)
    del out
    return (torch.cuda.max_memory_allocated(device) - before) / 2**20


def run_one(impl_name: str, w: Workload, inputs: dict, y_ref, device: torch.device,
            warmup_ms: float, rep_ms: float) -> Result:
    try:
        fn = IMPLS[w.op][impl_name].setup(w, inputs)
    except Unavailable as why:
        return Result(impl_name, "unavailable", str(why))
    host = extra = None
    try:
        y = fn()  # first call: compiles, autotunes; not timed
        acc = accuracy(y, y_ref, DTYPES[w.dtype])
        del y
        t = time_ms(fn, device, warmup_ms, rep_ms) / getattr(fn, "calls", 1)
        if w.op.endswith("step") and device.type == "cuda" and not hasattr(fn, "calls"):
            host = host_us_per_call(fn, device)
        if w.op.endswith("train") and device.type == "cuda":
            extra = peak_extra_mb(fn, device)
    except Exception as err:  # a peer's crash or an out-of-memory is a result, not the end of the run
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return Result(impl_name, "error", _short(err))
    status = "ok" if acc.passed else "inaccurate"
    return Result(impl_name, status, "" if acc.passed else "failed the accuracy check: no speedup shown", t, acc,
                  host, extra)


def run_benchmark(workloads: list[Workload], impl_names: list[str], device: torch.device, *,
                  warmup_ms: float = 25, rep_ms: float = 100, seed: int = 0, progress=None,
                  on_start=None, on_workload=None) -> BenchRun:
    """Run every implementation on every workload. `on_start(run)` is called once the ceilings are
    measured and `on_workload(run, workload_run)` after each workload, so results can stream out.
    Each workload runs the implementations of `impl_names` registered for its operation."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        ceilings = measure_ceilings(device)
    else:
        name, ceilings = f"CPU ({platform.processor() or platform.machine()})", None
    run = BenchRun(name, versions(), ceilings, list(impl_names))
    if on_start is not None:
        on_start(run)
    for w in workloads:
        floor_ms = floor_kind = None
        if ceilings is not None:
            seconds, floor_kind = floor_s(w, ceilings)
            floor_ms = seconds * 1e3
        wr = WorkloadRun(w, floor_ms, floor_kind)
        inputs = w.make_inputs(device, seed)
        y_ref = w.reference(inputs)
        for impl_name in [n for n in impl_names if n in IMPLS[w.op]]:
            if progress is not None:
                progress.start(f"{w.name} {impl_name}")
            wr.results.append(run_one(impl_name, w, inputs, y_ref, device, warmup_ms, rep_ms))
            if progress is not None:
                progress.done()
        del inputs, y_ref
        if device.type == "cuda":
            torch.cuda.empty_cache()
        run.workloads.append(wr)
        if on_workload is not None:
            on_workload(run, wr)
    return run
