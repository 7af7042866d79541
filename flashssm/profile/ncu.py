"""Hardware counters of the SSM kernels through Nsight Compute (`ncu`), where it is installed.

The step runs again in a child process under `ncu --clock-control none --profile-from-start off`
with the model cut to one Mamba layer (the kernels' shapes, and so their counters, do not depend on
the depth); the child brackets one step with cudaProfilerStart/Stop after warm-up, and only
kernels whose names match the SSM, conv and norm kernels are profiled. Metrics the installed ncu
does not know are dropped (their names change between GPU generations).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys

KERNEL_REGEX = r"regex:^_(ssd|scan|chunk|bmm_chunk|state_passing|conv|rmsnorm|layer_norm)_|selective_scan|causal_conv1d"

# (column title, candidate metric names: the first the installed ncu knows is used)
METRICS = (
    ("occupancy %", ("sm__warps_active.avg.pct_of_peak_sustained_active",)),
    ("L1 hit %", ("l1tex__t_sector_hit_rate.pct",)),
    ("L2 hit %", ("lts__t_sector_hit_rate.pct",)),
    ("DRAM % peak", ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                     "dram__throughput.avg.pct_of_peak_sustained_elapsed")),
    ("DRAM GB/s", ("dram__bytes.sum.per_second",)),
    ("tensor pipe %", ("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                       "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                       "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")),
    ("tensor (mma) pipe %", ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",)),
    ("FMA pipe %", ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",)),
    ("ALU pipe %", ("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",)),
    ("XU (exp) pipe %", ("sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_active",)),
    ("registers", ("launch__registers_per_thread",)),
    ("duration µs", ("gpu__time_duration.sum",)),
)


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for root in ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute"):
        if os.path.isdir(root):
            for dirpath, _, files in os.walk(root):
                if "ncu" in files:
                    return os.path.join(dirpath, "ncu")
    return None


def known_metrics(ncu: str) -> set[str]:
    """Base metric names the installed ncu lists for this GPU."""
    res = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    names = set()
    for line in res.stdout.splitlines():
        tok = line.split()
        if tok and "__" in tok[0]:
            names.add(tok[0])
    return names


def choose_metrics(known: set[str]) -> list[tuple[str, str]]:
    """(title, metric) for each column whose metric's base name is known (all, when `known` is empty:
    the query failed and ncu will say what it refuses)."""
    out, used = [], set()
    for title, candidates in METRICS:
        for metric in candidates:
            if (not known or metric.split(".")[0] in known) and metric not in used:
                out.append((title, metric))
                used.add(metric)
                break
    return out


_TIME_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
_RATE_GBPS = {"B/s": 1e-9, "KB/s": 1e-6, "MB/s": 1e-3, "GB/s": 1.0, "TB/s": 1e3}


def parse_csv(text: str, columns: list[tuple[str, str]]) -> list[dict]:
    """Rows of `ncu --import R --csv --page raw`: one per kernel name, metrics averaged over launches.
    The first row after the header holds units; values may carry thousands separators."""
    lines = [l for l in text.splitlines() if l.startswith('"')]
    if not lines:
        return []
    reader = list(csv.reader(io.StringIO("\n".join(lines))))
    header, body = reader[0], reader[1:]
    if body and (not body[0] or not body[0][0].strip().isdigit()):
        units = dict(zip(header, body[0]))
        body = body[1:]
    else:
        units = {}
    name_col = header.index("Kernel Name")
    by_kernel: dict = {}
    for row in body:
        rec = dict(zip(header, row))
        name = row[name_col]
        k = by_kernel.setdefault(name, {"kernel": name, "launches": 0, "sums": {}, "counts": {}})
        k["launches"] += 1
        for title, metric in columns:
            raw = rec.get(metric, "").replace(",", "")
            try:
                value = float(raw)
            except ValueError:
                continue
            unit = units.get(metric, "")
            if title == "duration µs":
                value *= _TIME_US.get(unit, 1e-3)
            if title == "DRAM GB/s":
                value *= _RATE_GBPS.get(unit.replace("byte", "B").replace("/second", "/s"), 1e-9)
            k["sums"][title] = k["sums"].get(title, 0.0) + value
            k["counts"][title] = k["counts"].get(title, 0) + 1
    return [{"kernel": k["kernel"], "launches": k["launches"],
             "values": {t: k["sums"][t] / k["counts"][t] for t in k["sums"]}} for k in by_kernel.values()]


def run(args, out_dir: str, kernels: str) -> dict:
    """Profile the SSM kernels of one kernel set under ncu; returns {'columns', 'rows', 'note'} or
    {'error'}."""
    ncu = find_ncu()
    if ncu is None:
        return {"error": "ncu (Nsight Compute) is not installed here"}
    columns = choose_metrics(known_metrics(ncu))
    report = os.path.join(out_dir, f"ncu-{kernels}")
    child = [sys.executable, "-m", "flashssm", "profile", "--model", args.model, "--mode", args.mode,
             "--batch", str(args.batch), "--seqlen", str(args.seqlen), "--kernels", kernels, "--dtype", args.dtype,
             "--decode-steps", str(args.decode_steps), "--ncu-child"]
    if args.checkpoint:
        child += ["--checkpoint", args.checkpoint]
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all",
           "--kernel-name", KERNEL_REGEX, "--metrics", ",".join(m for _, m in columns), "-f", "-o", report] + child
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.ncu_timeout)
    if res.returncode != 0 or not os.path.exists(report + ".ncu-rep"):
        tail = (res.stdout + res.stderr).strip().splitlines()[-6:]
        return {"error": f"ncu exited {res.returncode}: " + " | ".join(tail)}
    imp = subprocess.run([ncu, "--import", report + ".ncu-rep", "--csv", "--page", "raw"], capture_output=True,
                         text=True, timeout=600)
    with open(report + ".csv", "w") as f:
        f.write(imp.stdout)
    rows = parse_csv(imp.stdout, columns)
    for r in rows:
        r["kernels"] = kernels
    return {"columns": [t for t, _ in columns], "metrics": dict(columns), "rows": rows,
            "note": f"`{' '.join(cmd[:6])} ...` on one layer; report files `ncu-<kernels>.ncu-rep` (raw: `ncu-<kernels>.csv`)."}


def child_step(args) -> int:
    """Inside ncu: warm up one layer's step, then run one step between cudaProfilerStart/Stop."""
    import torch

    from flashssm.profile import run as prun

    device = torch.device("cuda")
    config = prun.model_config(args.model, 1).replace(attn_layer_idx=[])
    dtype, amp = prun.weights(args, device)
    model, is_peer = prun.build(args.kernels[0], config, device, dtype, args.checkpoint)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seqlen), device=device)
    step = prun.make_step(args.mode, model, is_peer, ids, False, amp, args.decode_steps)
    step()
    step()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    step()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    return 0
