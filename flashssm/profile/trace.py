"""Read a PyTorch profiler Chrome trace into GPU launches with their context.

Each GPU activity (kernel, memcpy, memset) is joined to the runtime call that launched it (same
`correlation`), and that call to the CPU ranges enclosing it on its thread: aten ops, autograd
nodes, and the ranges `run.py` adds (`flashssm.phase:<name>` around forward, backward and the
optimizer step; `flashssm.module:<path>` around each module's forward). A launch in the backward
runs on autograd's thread, outside every module range: it gets the module of the forward op whose
autograd node launched it (the node and the op share a sequence number).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

PHASE_PREFIX = "flashssm.phase:"
MODULE_PREFIX = "flashssm.module:"
_DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
_LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
_RANGE_CATS = ("cpu_op", "user_annotation")


@dataclass
class Launch:
    name: str                      # the kernel's full (demangled) name
    kind: str                      # kernel / memcpy / memset
    ts: float                      # GPU start, µs
    dur: float                     # GPU duration, µs
    ops: list[str] = field(default_factory=list)   # enclosing CPU ranges, outermost first (no module/phase ranges)
    op: str | None = None          # the innermost aten op (`ops` entry starting with 'aten::')
    op_dims: list | None = None    # its recorded input shapes and types
    op_types: list | None = None
    module: str | None = None      # innermost module path (forward range, or the forward op of the autograd node)
    phase: str | None = None
    grid: list | None = None
    block: list | None = None
    registers: int | None = None
    op_id: int | None = None       # identifies the aten op call (its kernels share its cost)

    @property
    def short_name(self) -> str:
        return short_kernel_name(self.name)


def short_kernel_name(name: str) -> str:
    """'void at::native::foo<4, bar<int> >(args)' -> 'at::native::foo'; Triton names are kept."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    depth, out = 0, []
    for ch in s:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    s = "".join(out).strip()
    return re.sub(r"\s+", " ", s) or name


def load(path: str) -> dict:
    """A Chrome trace, plain or gzipped (path.gz is tried when path is missing)."""
    import gzip
    import os

    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def launches(trace: dict) -> list[Launch]:
    """Every GPU activity of the trace, in GPU start order, with its CPU context."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    ranges_by_thread: dict = {}
    launch_by_corr: dict = {}
    device = []
    for e in events:
        cat = e.get("cat", "")
        if cat in _RANGE_CATS:
            ranges_by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
        elif cat in _LAUNCH_CATS:
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                launch_by_corr[corr] = e
        elif cat in _DEVICE_CATS:
            device.append(e)

    phases = sorted((e["ts"], e["ts"] + e.get("dur", 0), e["name"][len(PHASE_PREFIX):])
                    for r in ranges_by_thread.values() for e in r if e["name"].startswith(PHASE_PREFIX))
    stacks, fwd_module = _stacks(ranges_by_thread, launch_by_corr)

    out = []
    for e in sorted(device, key=lambda e: e["ts"]):
        args = e.get("args") or {}
        launch = Launch(name=e.get("name", "?"), kind=_DEVICE_CATS[e["cat"]], ts=float(e["ts"]),
                        dur=float(e.get("dur", 0)), grid=args.get("grid"), block=args.get("block"),
                        registers=args.get("registers per thread"))
        runtime = launch_by_corr.get(args.get("correlation"))
        if runtime is not None:
            stack = stacks.get(id(runtime), [])
            module, backward_seq = None, None
            for r in stack:
                name = r["name"]
                if name.startswith(MODULE_PREFIX):
                    module = name[len(MODULE_PREFIX):]
                elif name.startswith(PHASE_PREFIX):
                    continue
                else:
                    launch.ops.append(name)
                    rargs = r.get("args") or {}
                    if rargs.get("Fwd thread id", 0) and "Sequence number" in rargs:   # an autograd node
                        backward_seq = rargs["Sequence number"]
                    if name.startswith("aten::"):
                        launch.op, launch.op_dims, launch.op_types = name, rargs.get("Input Dims"), rargs.get("Input type")
                        launch.op_id = id(r)
            if module is None and backward_seq is not None:
                module = fwd_module.get(backward_seq)
            launch.module = module
            launch.phase = _phase_at(phases, float(runtime["ts"]))
        out.append(launch)
    return out


def _phase_at(phases, ts: float) -> str | None:
    """The innermost (latest-starting) phase range holding ts; phases are few."""
    found = None
    for start, end, name in phases:
        if start <= ts <= end:
            found = name
    return found


def _stacks(ranges_by_thread: dict, launch_by_corr: dict):
    """For each runtime launch, the CPU ranges enclosing it on its thread (outermost first); and the
    module around each forward op that carries an autograd sequence number."""
    launches_by_thread: dict = {}
    for e in launch_by_corr.values():
        launches_by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    stacks: dict = {}
    fwd_module: dict = {}
    for thread in set(ranges_by_thread) | set(launches_by_thread):
        items = [(r["ts"], 0, -r.get("dur", 0), i, r) for i, r in enumerate(ranges_by_thread.get(thread, []))]
        items += [(l["ts"], 1, 0, i, l) for i, l in enumerate(launches_by_thread.get(thread, []))]
        items.sort(key=lambda t: t[:4])
        stack: list = []
        for ts, is_launch, _, _, ev in items:
            while stack and stack[-1]["ts"] + stack[-1].get("dur", 0) < ts:
                stack.pop()
            if is_launch:
                stacks[id(ev)] = list(stack)
                continue
            stack.append(ev)
            args = ev.get("args") or {}
            seq = args.get("Sequence number")
            if seq is not None and not args.get("Fwd thread id", 0) and seq not in fwd_module:
                module = next((r["name"][len(MODULE_PREFIX):] for r in reversed(stack)
                               if r["name"].startswith(MODULE_PREFIX)), None)
                if module is not None:
                    fwd_module[seq] = module
    return stacks, fwd_module
