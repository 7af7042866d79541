"""Condense Nsight Compute's per-instruction stall sampling (the CSV of `profile_ssd_forward.sh W DIR source`).

    python benchmarks/stall_summary.py FILE.csv[.gz] [--top 40] [--context 3]

Prints the samples by stall reason, by opcode, and the instructions with the most samples, each
with the instructions before it (a stall is charged to the instruction that waits: the cause is
usually the producer a few lines above, e.g. a wgmma wait, a barrier or a shared-memory load).
"""

import argparse
import collections
import csv
import gzip


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--context", type=int, default=2)
    a = p.parse_args()
    with (gzip.open(a.csv, "rt") if a.csv.endswith(".gz") else open(a.csv)) as f:
        rows = list(csv.reader(f))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    cols = rows[head]
    data = [r for r in rows[head + 1:] if len(r) == len(cols)]
    ix = {c: i for i, c in enumerate(cols)}
    reasons = [c for c in cols if c.startswith("stall_") and "Not Issued" not in c]
    total = sum(int(r[ix["Warp Stall Sampling (All Samples)"]]) for r in data)
    print(f"{len(data)} instructions, {total} samples")
    by_reason = collections.Counter()
    for r in data:
        for c in reasons:
            by_reason[c] += int(r[ix[c]] or 0)
    print("by reason: " + ", ".join(f"{c[6:]} {100 * v / total:.1f}%" for c, v in by_reason.most_common() if v))
    by_op = collections.Counter()
    for r in data:
        op = r[ix["Source"]].split()
        op = [t for t in op if not t.startswith("@")]
        by_op[op[0].split(".")[0] if op else "?"] += int(r[ix["Warp Stall Sampling (All Samples)"]])
    print("by opcode: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_op.most_common(16)))
    order = sorted(range(len(data)), key=lambda i: -int(data[i][ix["Warp Stall Sampling (All Samples)"]]))
    print(f"\ntop {a.top} instructions (samples %, main reasons), with {a.context} before each:")
    for i in order[:a.top]:
        r = data[i]
        s = int(r[ix["Warp Stall Sampling (All Samples)"]])
        why = sorted(((int(r[ix[c]] or 0), c[6:]) for c in reasons), reverse=True)[:2]
        print(f"--- {100 * s / total:5.2f}%  {', '.join(f'{n} {v}' for v, n in why if v)}")
        for j in range(max(0, i - a.context), i + 1):
            print(f"    {'>' if j == i else ' '} [{j:5d}] {data[j][ix['Source']].strip()[:110]}")


if __name__ == "__main__":
    main()
