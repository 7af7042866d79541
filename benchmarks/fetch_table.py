"""A table a kernel launch from Nsight Compute's CSV of `profile_fetch.sh` (one row per launch and metric): the
kernel, its duration, instructions, registers, grid, and the stall reasons per issued instruction, the largest first
after no_instruction. Values in base units (`--print-units base`: the duration in nanoseconds).

    python3 benchmarks/fetch_table.py FILE.csv
"""

import argparse
import collections
import csv

PREFIX = "smsp__average_warps_issue_stalled_"
SUFFIX = "_per_issue_active.ratio"


def launches(path: str) -> list[tuple[str, dict]]:
    """(kernel name, {metric: value}) for each profiled launch in the CSV, in launch order."""
    with open(path) as f:
        rows = [r for r in csv.reader(f) if r]
    head = next(i for i, r in enumerate(rows) if "Metric Name" in r)
    cols = {c: i for i, c in enumerate(rows[head])}
    by_id = collections.OrderedDict()
    for r in rows[head + 1:]:
        if len(r) != len(rows[head]):
            continue
        key = r[cols["ID"]]
        name, metrics = by_id.setdefault(key, (r[cols["Kernel Name"]], {}))
        try:
            metrics[r[cols["Metric Name"]]] = float(r[cols["Metric Value"]].replace(",", ""))
        except ValueError:
            pass
    return list(by_id.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    a = ap.parse_args()
    rows = launches(a.csv)
    total = sum(m.get("gpu__time_duration.sum", 0) for _, m in rows)
    for name, m in rows:
        stalls = {k[len(PREFIX):-len(SUFFIX)]: v for k, v in m.items() if k.startswith(PREFIX)}
        fetch = stalls.pop("no_instruction", float("nan"))
        rest = " ".join(f"{k} {v:.2f}" for k, v in sorted(stalls.items(), key=lambda kv: -kv[1])[:5])
        dur = m.get("gpu__time_duration.sum", 0)
        regs = m.get("launch__registers_per_thread", 0)
        print(f"{name[:40]:40s} {dur / 1e3:9.1f} us ({100 * dur / max(total, 1):4.1f} %) "
              f"inst {m.get('smsp__inst_executed.sum', 0) / 1e6:8.1f} M regs {regs:3.0f} "
              f"grid {m.get('launch__grid_size', 0):7.0f} | no_instruction {fetch:.2f} | {rest}")


if __name__ == "__main__":
    main()
