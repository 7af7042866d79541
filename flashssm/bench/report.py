"""The benchmark's table, JSON and plot."""

from __future__ import annotations

import json
from pathlib import Path

from flashssm.bench.impls import IMPLS
from flashssm.bench.run import BenchRun, Result, WorkloadRun


def _fmt(value, spec: str, empty: str = "-") -> str:
    return empty if value is None else format(value, spec)


def _row(r: Result, wr: WorkloadRun, peers: list[str], host: bool, mem: bool) -> list[str]:
    x_floor = None
    if r.verified and wr.floor_ms:
        x_floor = r.time_ms / wr.floor_ms
    cells = [r.impl, _fmt(r.time_ms, ".4f" if r.time_ms is not None and r.time_ms < 0.1 else ".3f"),
             _fmt(x_floor, ".2f" if x_floor is not None and x_floor < 10 else ".1f")]
    if host:
        cells.append(_fmt(r.host_us, ".1f"))
    if mem:
        cells.append(_fmt(r.extra_mb, ".0f"))
    for peer in peers:
        peer_time = wr.verified_time(peer)
        speedup = peer_time / r.time_ms if (r.verified and peer_time and peer != r.impl) else None
        cells.append(_fmt(speedup, ".2f"))
    acc = r.accuracy
    cells += [_fmt(acc and acc.rel_err, ".2e"), _fmt(acc and 100 * acc.within_1e3, ".1f"),
              _fmt(acc and 100 * acc.within_1pct, ".3f"), _fmt(acc and acc.nan, "d")]
    note = r.note if r.status != "ok" else ""
    cells.append(f"[{r.status}] {note}".strip() if r.status != "ok" else "")
    return cells


def _peers(run: BenchRun, wr: WorkloadRun | None = None) -> list[str]:
    """The compared-against implementations: of one workload, or of any workload of the run."""
    runs = [wr] if wr is not None else run.workloads
    names = [r.impl for w in runs for r in w.results if IMPLS[w.workload.op][r.impl].is_peer]
    if wr is None and not run.workloads:
        names = [n for n in run.impls if any(n in impls and impls[n].is_peer for impls in IMPLS.values())]
    return list(dict.fromkeys(names))


def format_header(run: BenchRun) -> str:
    lines = [f"device: {run.device}   " + "  ".join(f"{k} {v}" for k, v in run.versions.items() if v)]
    if run.ceilings is not None:
        c = run.ceilings
        lines.append(f"ceilings measured now: copy {c.copy_bytes_per_s / 1e12:.2f} TB/s (read + write), "
                     f"bf16 GEMM {c.gemm_flops_per_s / 1e12:.0f} TFLOP/s")
    else:
        lines.append("no GPU: times below are CPU wall times (Triton interpreter, PyTorch on CPU) and say "
                     "nothing about speed; timings need a GPU")
    if _peers(run):
        lines.append("vs P = P's time / this time (above 1: faster than P); shown only for results that "
                     "passed the accuracy check")
    return "\n".join(lines)


def format_workload(run: BenchRun, wr: WorkloadRun) -> str:
    peers = _peers(run, wr)
    host = any(r.host_us is not None for r in wr.results)
    mem = any(r.extra_mb is not None for r in wr.results)
    head = (["impl", "ms", "x floor"] + (["host us"] if host else []) + (["peak MiB"] if mem else [])
            + [f"vs {p}" for p in peers]
            + ["rel err", "<=1e-3 %", "<=1% %", "NaN", ""])
    w = wr.workload
    floor = f"floor {wr.floor_ms:.4f} ms ({wr.floor_kind})" if wr.floor_ms else "floor: needs a GPU"
    lines = ["", f"{w.name}  {w.op}  [{w.shape}]  {floor}"]
    if host:
        lines.append("host us: wall time per call on the host (Python, validation, launch); a step's device "
                     "time alone is the flashssm-graph row")
    if mem:
        lines.append("peak MiB: memory allocated at the peak of one call (forward + backward) above what was "
                     "allocated before it, outputs and gradients included")
    rows = [head] + [_row(r, wr, peers, host, mem) for r in wr.results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head) - 1)]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                               for i, (cell, width) in enumerate(zip(row, widths))) + "  " + row[-1])
    return "\n".join(lines)


def format_table(run: BenchRun) -> str:
    return "\n".join([format_header(run)] + [format_workload(run, wr) for wr in run.workloads])


def write_json(run: BenchRun, path: str | Path) -> None:
    Path(path).write_text(json.dumps(run.as_dict(), indent=2))


def write_plot(run: BenchRun, path: str | Path) -> None:
    """Time and fraction of the floor against seqlen: a colour per implementation, a marker per batch.

    Only workloads of the first workload's model shape are drawn, so the lines compare like with like.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    scans = [wr for wr in run.workloads if wr.workload.op == "ssd_scan"]
    if not scans:
        return
    first = scans[0].workload
    model = (first.nheads, first.headdim, first.dstate, first.ngroups, first.chunk_size, first.dtype)
    series: dict[tuple[str, int], list[tuple[int, float, float | None]]] = {}
    for wr in scans:
        w = wr.workload
        if (w.nheads, w.headdim, w.dstate, w.ngroups, w.chunk_size, w.dtype) != model or w.lengths is not None:
            continue  # (packed rows: another kind of line)
        for r in wr.results:
            if r.verified:
                frac = wr.floor_ms / r.time_ms if wr.floor_ms else None
                series.setdefault((r.impl, w.batch), []).append((w.seqlen, r.time_ms, frac))
    impls = [name for name in run.impls if any(key[0] == name for key in series)]
    batches = sorted({key[1] for key in series})
    colours = {name: f"C{i}" for i, name in enumerate(impls)}
    markers = {b: "osD^v<>ph"[i % 9] for i, b in enumerate(batches)}
    fig, (ax_time, ax_floor) = plt.subplots(1, 2, figsize=(12, 4.8))
    for (impl, batch), points in sorted(series.items()):
        points.sort()
        style = dict(color=colours[impl], marker=markers[batch], linestyle="-" if len(points) > 1 else "none")
        seqlens = [p[0] for p in points]
        ax_time.plot(seqlens, [p[1] for p in points], **style)
        if all(p[2] is not None for p in points):
            ax_floor.plot(seqlens, [p[2] for p in points], **style)
    ax_time.set(xscale="log", yscale="log", xlabel="seqlen", ylabel="time (ms)", title="ssd_scan forward")
    ax_floor.set(xscale="log", xlabel="seqlen", ylabel="floor / time", title="fraction of the hardware floor")
    ax_floor.set_ylim(bottom=0)
    for ax in (ax_time, ax_floor):
        ax.grid(True, which="both", alpha=0.3)
    handles = [Line2D([], [], color=colours[name], label=name) for name in impls]
    handles += [Line2D([], [], color="grey", marker=markers[b], linestyle="none", label=f"batch {b}") for b in batches]
    ax_time.legend(handles=handles, fontsize=8)
    fig.suptitle(f"{run.device}: {first.nheads} heads x {first.headdim}, dstate {first.dstate}, "
                 f"{first.ngroups} group(s), chunk {first.chunk_size}, {first.dtype}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
