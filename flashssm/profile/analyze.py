"""From a profiled step's launches to the tables of the report: time per operator class, and per
kernel its launches, time, share, achieved bandwidth and FLOP rate against the ceilings."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from flashssm.profile.classify import CLASSES, classify
from flashssm.profile.counts import NORM_KERNELS, Cost, Shape, formula_cost, op_cost
from flashssm.profile.trace import Launch


@dataclass
class KernelRow:
    cls: str
    name: str
    launches: int = 0
    time_us: float = 0.0
    costed_launches: int = 0
    costed_time_us: float = 0.0
    bytes: float = 0.0
    tensor_flops: float = 0.0
    vector_flops: float = 0.0
    phases: set = field(default_factory=set)

    @property
    def flops(self) -> float:
        return self.tensor_flops + self.vector_flops

    def gbps(self) -> float | None:
        return self.bytes / self.costed_time_us / 1e3 if self.costed_time_us else None

    def tflops(self) -> float | None:
        return self.flops / self.costed_time_us / 1e6 if self.costed_time_us else None

    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes else None

    def ceiling_fraction(self, bandwidth: float, peak_flops: float) -> float | None:
        """Achieved over attainable: min(bandwidth × intensity, peak) for FLOP-counted kernels, the
        bandwidth alone for pure data movement. bandwidth in bytes/s, peak in FLOP/s."""
        if not self.costed_time_us or not self.bytes:
            return None
        seconds = self.costed_time_us * 1e-6
        if not self.flops:
            return self.bytes / seconds / bandwidth
        attainable = min(bandwidth * self.flops / self.bytes, peak_flops)
        return self.flops / seconds / attainable


@dataclass
class Analysis:
    label: str
    rows: list[KernelRow]
    total_us: float
    class_us: dict
    phase_class_us: dict
    layer_us: dict

    def rows_of(self, cls: str) -> list[KernelRow]:
        return [r for r in self.rows if r.cls == cls]

    def share(self, cls: str) -> float:
        return self.class_us.get(cls, 0.0) / self.total_us if self.total_us else 0.0

    def costed(self):
        """Bytes, FLOPs and time of every launch with a counted cost."""
        b = sum(r.bytes for r in self.rows)
        f = sum(r.flops for r in self.rows)
        t = sum(r.costed_time_us for r in self.rows)
        return b, f, t


def _variant(launch: Launch, layer: dict | None) -> str:
    """A suffix telling apart kernels of one name doing different jobs (mamba_ssm's two RMS norms
    share kernel names; flashssm's forward kernel recomputes chunk states in the backward)."""
    name = launch.short_name
    if name == "_ssd_fwd_kernel" and launch.phase == "backward":
        return " [state recompute]"
    if layer is not None and name in NORM_KERNELS:
        return " [gated]" if layer.get("gated") else " [block]"
    return ""


def launch_costs(launches: list[Launch], modules: dict, shape: Shape) -> list[Cost | None]:
    """Each launch's cost: a kernel formula with its layer's dims, else its aten op's cost shared
    among the op's kernels by time, else None."""
    costs: list[Cost | None] = [None] * len(launches)
    by_op: dict = defaultdict(list)
    for i, l in enumerate(launches):
        c = formula_cost(l.short_name, modules.get(l.module) if l.module else None, shape, l.phase)
        if c is not None:
            costs[i] = c
        elif l.op_id is not None:
            by_op[l.op_id].append(i)
    for idx in by_op.values():
        first = launches[idx[0]]
        kernels = [i for i in idx if launches[i].kind == "kernel"]
        idx = kernels or idx      # a memset inside a matrix product (a cuBLAS workspace) does none of its FLOPs
        c = op_cost(first.op, first.op_dims, first.op_types)
        if c is None:
            continue
        total = sum(launches[i].dur for i in idx) or float(len(idx))
        for i in idx:
            costs[i] = c.scaled((launches[i].dur or 1.0) / total)
    return costs


_LAYER = re.compile(r"layers\.(\d+)")


def analyze(launches: list[Launch], modules: dict, shape: Shape, label: str = "") -> Analysis:
    costs = launch_costs(launches, modules, shape)
    rows: dict = {}
    class_us: dict = defaultdict(float)
    phase_class_us: dict = defaultdict(lambda: defaultdict(float))
    layer_us: dict = defaultdict(float)
    for l, c in zip(launches, costs):
        cls = classify(l.name, l.ops, l.kind)
        layer = modules.get(l.module) if l.module else None
        key = (cls, l.short_name + _variant(l, layer))
        row = rows.get(key)
        if row is None:
            row = rows[key] = KernelRow(cls, key[1])
        row.launches += 1
        row.time_us += l.dur
        row.phases.add(l.phase or "?")
        if c is not None:
            row.costed_launches += 1
            row.costed_time_us += l.dur
            row.bytes += c.bytes
            row.tensor_flops += c.tensor_flops
            row.vector_flops += c.vector_flops
        class_us[cls] += l.dur
        phase_class_us[l.phase or "?"][cls] += l.dur
        m = _LAYER.search(l.module or "")
        if m:
            layer_us[int(m.group(1))] += l.dur
    ordered = sorted(rows.values(), key=lambda r: (CLASSES.index(r.cls), -r.time_us))
    return Analysis(label, ordered, sum(class_us.values()), dict(class_us),
                    {p: dict(v) for p, v in phase_class_us.items()}, dict(layer_us))
