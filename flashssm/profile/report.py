"""Write a profile's tables, plots and report.md: one kernel set, or several side by side (--compare)."""

from __future__ import annotations

import csv
import json
import os

from flashssm.profile.analyze import Analysis
from flashssm.profile.classify import CLASSES

_COLORS = {"GEMM": "#4c72b0", "SSM scan": "#dd8452", "conv1d": "#55a868", "norm": "#c44e52",
           "attention": "#8172b3", "element-wise": "#937860", "other": "#8c8c8c"}


def _fmt(v, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def breakdown_table(analyses: list[Analysis]) -> str:
    head = "| class | " + " | ".join(f"{a.label} ms | {a.label} share" for a in analyses) + " |"
    sep = "|---|" + "---:|---:|" * len(analyses)
    lines = [head, sep]
    for cls in CLASSES:
        if not any(cls in a.class_us for a in analyses):
            continue
        cells = [f"{a.class_us.get(cls, 0) / 1e3:.2f} | {100 * a.share(cls):.1f} %" for a in analyses]
        lines.append(f"| {cls} | " + " | ".join(cells) + " |")
    lines.append("| **total (GPU busy)** | " + " | ".join(f"**{a.total_us / 1e3:.2f}** | 100 %" for a in analyses) + " |")
    return "\n".join(lines)


def phase_table(a: Analysis) -> str:
    phases = [p for p in ("forward", "backward", "optimizer", "?") if p in a.phase_class_us]
    lines = ["| class | " + " | ".join(f"{p} ms" for p in phases) + " |", "|---|" + "---:|" * len(phases)]
    for cls in CLASSES:
        if any(cls in a.phase_class_us[p] for p in phases):
            lines.append(f"| {cls} | " + " | ".join(f"{a.phase_class_us[p].get(cls, 0) / 1e3:.2f}" for p in phases) + " |")
    return "\n".join(lines)


def kernel_table(a: Analysis, ceilings: dict | None, classes=None, limit: int | None = None) -> str:
    bw, peak = _ceilings(ceilings)
    lines = ["| class | kernel | launches | ms | share | µs/launch | GB/s | TFLOP/s | FLOP/B | tensor:vector | "
             "of ceiling |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows = [r for r in a.rows if classes is None or r.cls in classes]
    rows = sorted(rows, key=lambda r: -r.time_us)[:limit] if limit else rows
    for r in rows:
        frac = r.ceiling_fraction(bw, peak) if bw else None
        tv = (f"{r.tensor_flops / r.vector_flops:.1f}" if r.vector_flops and r.tensor_flops else
              ("tensor only" if r.tensor_flops else ("vector only" if r.vector_flops else "—")))
        lines.append(f"| {r.cls} | `{r.name}` | {r.launches} | {r.time_us / 1e3:.3f} | "
                     f"{100 * r.time_us / a.total_us:.1f} % | {r.time_us / r.launches:.1f} | {_fmt(r.gbps(), '.0f')} | "
                     f"{_fmt(r.tflops(), '.1f')} | {_fmt(r.intensity(), '.1f')} | {tv} | "
                     f"{_fmt(None if frac is None else 100 * frac, '.0f')}{'' if frac is None else ' %'} |")
    return "\n".join(lines)


def write_csv(a: Analysis, path: str, ceilings: dict | None) -> None:
    bw, peak = _ceilings(ceilings)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["class", "kernel", "launches", "time_us", "share", "bytes", "tensor_flops", "vector_flops",
                    "costed_launches", "gbps", "tflops", "flop_per_byte", "ceiling_fraction", "phases"])
        for r in a.rows:
            w.writerow([r.cls, r.name, r.launches, f"{r.time_us:.3f}", f"{r.time_us / a.total_us:.5f}",
                        f"{r.bytes:.0f}", f"{r.tensor_flops:.0f}", f"{r.vector_flops:.0f}", r.costed_launches,
                        r.gbps(), r.tflops(), r.intensity(), r.ceiling_fraction(bw, peak) if bw else None,
                        "+".join(sorted(r.phases))])


def summary(a: Analysis, ceilings: dict | None) -> dict:
    bw, peak = _ceilings(ceilings)
    b, f, t = a.costed()
    return {
        "label": a.label, "total_ms": a.total_us / 1e3,
        "class_ms": {k: v / 1e3 for k, v in a.class_us.items()},
        "class_share": {k: a.share(k) for k in a.class_us},
        "model_flop_per_byte": f / b if b else None,
        "model_tflops": f / a.total_us / 1e6 if a.total_us else None,
        "costed_time_share": t / a.total_us if a.total_us else None,
        "ssm_kernels": [{"kernel": r.name, "launches": r.launches, "ms": r.time_us / 1e3, "gbps": r.gbps(),
                         "tflops": r.tflops(), "ceiling_fraction": r.ceiling_fraction(bw, peak) if bw else None,
                         "bandwidth_fraction": (r.gbps() * 1e9 / bw) if (bw and r.gbps()) else None}
                        for r in a.rows_of("SSM scan")],
    }


def _ceilings(ceilings: dict | None):
    """(copy bytes/s, GEMM FLOP/s) measured in the run, or (None, None) on the CPU."""
    return (ceilings["copy_bytes_per_s"], ceilings["gemm_flops_per_s"]) if ceilings else (None, None)


def _pyplot():
    """matplotlib's pyplot on the file-only backend, or None when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def plot_breakdown(analyses: list[Analysis], path: str) -> bool:
    plt = _pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(analyses), 4.5))
    bottoms = [0.0] * len(analyses)
    for cls in CLASSES:
        vals = [a.class_us.get(cls, 0) / 1e3 for a in analyses]
        if any(vals):
            ax.bar([a.label for a in analyses], vals, bottom=bottoms, label=cls, color=_COLORS[cls])
            bottoms = [b + v for b, v in zip(bottoms, vals)]
    ax.set_ylabel("GPU time per step (ms)")
    ax.set_title("Operator breakdown")
    if any(bottoms):
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


def plot_roofline(analyses: list[Analysis], ceilings: dict, path: str, min_share: float = 0.002) -> bool:
    plt = _pyplot()
    if plt is None:
        return False
    bw, peak = _ceilings(ceilings)
    fig, axes = plt.subplots(1, len(analyses), figsize=(6.5 * len(analyses), 5), squeeze=False)
    for ax, a in zip(axes[0], analyses):
        xs = [r.intensity() for r in a.rows if r.intensity()]
        lo, hi = min(xs + [0.1]) / 2, max(xs + [peak / bw * 4]) * 2
        ridge = peak / bw
        ax.loglog([lo, ridge, hi], [bw * lo / 1e12, peak / 1e12, peak / 1e12], color="black", lw=1.2)
        ax.text(lo * 1.2, bw * lo * 1.4 / 1e12, f"{bw / 1e12:.2f} TB/s copy", fontsize=7, rotation=0)
        ax.text(ridge * 1.1, peak * 1.08 / 1e12, f"{peak / 1e12:.0f} TFLOP/s bf16 GEMM", fontsize=7)
        for r in a.rows:
            ai, tf = r.intensity(), r.tflops()
            if not ai or not tf or r.time_us < min_share * a.total_us:
                continue
            size = 20 + 600 * r.time_us / a.total_us
            ax.scatter([ai], [tf], s=size, color=_COLORS[r.cls], alpha=0.75, edgecolors="black", linewidths=0.4)
            if r.cls == "SSM scan":
                ax.annotate(r.name.lstrip("_").replace("_kernel", ""), (ai, tf), fontsize=6, xytext=(3, 3),
                            textcoords="offset points")
        b, f, t = a.costed()
        if b and a.total_us:
            ax.scatter([f / b], [f / a.total_us / 1e6], marker="*", s=200, color="gold", edgecolors="black",
                       label="whole step", zorder=5)
        for cls in CLASSES:
            ax.scatter([], [], color=_COLORS[cls], label=cls)
        ax.set_xlabel("arithmetic intensity (FLOP / byte)")
        ax.set_ylabel("achieved TFLOP/s")
        ax.set_title(f"Roofline: {a.label} (point area ∝ time)")
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(True, which="both", alpha=0.2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


def write_report(out_dir: str, meta: dict, analyses: list[Analysis], ncu: dict | None = None) -> str:
    """Write every output for one profile (or a comparison) into out_dir; returns report.md's path."""
    os.makedirs(out_dir, exist_ok=True)
    ceilings = meta.get("ceilings")
    for a in analyses:
        write_csv(a, os.path.join(out_dir, f"kernels-{a.label}.csv"), ceilings)
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump({"meta": meta, "runs": [summary(a, ceilings) for a in analyses], "ncu": ncu}, f, indent=1,
                  default=str)
    have_breakdown = plot_breakdown(analyses, os.path.join(out_dir, "breakdown.png"))
    have_roofline = ceilings is not None and plot_roofline(analyses, ceilings, os.path.join(out_dir, "roofline.png"))

    w = meta.get("workload", {})
    lines = [f"# flashssm profile: {w.get('model')} {w.get('mode')} {w.get('batch')}×{w.get('seqlen')}", ""]
    lines.append(f"Device: {meta.get('device', '?')}; {meta.get('versions', '')}. Kernels: "
                 + ", ".join(a.label for a in analyses) + ". " + meta.get("description", ""))
    if ceilings:
        lines.append(f"Ceilings measured in the run: copy {ceilings['copy_bytes_per_s'] / 1e12:.2f} TB/s (bytes read + "
                     f"written), bf16 GEMM {ceilings['gemm_flops_per_s'] / 1e12:.0f} TFLOP/s.")
    for a in analyses:
        extra = meta.get("runs", {}).get(a.label, {})
        if extra:
            peak = extra.get("peak_mib")
            lines.append(f"- {a.label}: step wall time {extra.get('step_ms', float('nan')):.2f} ms"
                         + (f", peak memory {peak:.0f} MiB" if peak is not None else "")
                         + f", {a.total_us / 1e3:.2f} ms of GPU activity in the profiled step"
                         + f" ({len(a.rows)} distinct kernels).")
    for label, why in (meta.get("errors") or {}).items():
        lines.append(f"- {label}: not run: {why}")
    if not any(a.total_us for a in analyses):
        lines.append("- The trace holds no GPU activity (a CPU run): the tables below are empty.")
    lines += ["", "Trace: `trace-<kernels>.json` (chrome://tracing or https://ui.perfetto.dev).", "",
              "## Operator breakdown", "", breakdown_table(analyses), ""]
    if have_breakdown:
        lines += ["![breakdown](breakdown.png)", ""]
    for a in analyses:
        lines += [f"By phase ({a.label}):", "", phase_table(a), ""]
    lines += ["## SSM kernels", ""]
    for a in analyses:
        lines += [f"### {a.label}", "", kernel_table(a, ceilings, classes=("SSM scan",)), ""]
    if have_roofline:
        lines += ["## Roofline", "", "Each kernel at its counted arithmetic intensity and achieved FLOP rate (area ∝ "
                  "share of step time); the star is the whole step. Bytes are compulsory traffic (each tensor "
                  "read or written once), so a kernel that re-reads from DRAM sits lower than its true DRAM rate.",
                  "", "![roofline](roofline.png)", ""]
    if ncu:
        lines += ["## Hardware counters (Nsight Compute)", "", ncu.get("note", ""), "", ncu_table(ncu), ""]
    lines += ["## Every kernel (top 40 by time)", ""]
    for a in analyses:
        lines += [f"### {a.label}", "", kernel_table(a, ceilings, limit=40), "",
                  f"Full table: `kernels-{a.label}.csv`.", ""]
    lines += ["## How these figures are made", "",
              "One step after warm-up, profiled with torch.profiler (CUDA activity). Each kernel is classified by "
              "the operator that launched it (flashssm's and mamba_ssm's autograd functions and custom ops, aten "
              "ops), else by its name. Bytes and FLOPs come from formulas per SSM / conv / norm kernel over the "
              "layer's shapes (flashssm/profile/counts.py), or from the launching aten op's recorded shapes "
              "(matrix products, attention, element-wise); kernels with neither are timed but not placed on the "
              "roofline. 'of ceiling' is achieved over min(bandwidth × intensity, GEMM peak)."]
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def ncu_table(ncu: dict) -> str:
    metrics = ncu.get("columns", [])
    lines = ["| kernels | kernel | launches | " + " | ".join(metrics) + " |", "|---|---|---:|" + "---:|" * len(metrics)]
    for row in ncu.get("rows", []):
        lines.append(f"| {row['kernels']} | `{row['kernel']}` | {row['launches']} | "
                     + " | ".join(_fmt(row["values"].get(m), ".1f") for m in metrics) + " |")
    return "\n".join(lines)
