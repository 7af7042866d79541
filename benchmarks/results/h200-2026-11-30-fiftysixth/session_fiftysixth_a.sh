#!/usr/bin/env bash
# Fifty-sixth session, call 1 (about 520 s).
# (1) The fifty-fifth session's next_session_b.sh, its base carried: aa6b204 (the backward edge chunks' redundant k_hi
# guard dropped) against 8c87795's scan.py (carried as scan_base_8c87795.py, `git show 8c87795:...`; not kept in the
# repository). Prediction then: packed 8 x 2K backward -0.5 to -1 %. But the three packed workloads' backward
# configurations have no segments (segment 0, no row chains), so the own-share loop the guard sat in runs no tile
# there; offline (3.6) the chunk loop's spilled loads went 7 -> 10 with the change. Revised prediction: within
# +-0.5 %, or a small loss.
# (2) SEGMENTS_WHERE_CHAINED (fe87f6b, off): the packed rows' kernels without the hand-over code where no row chains
# (all three packed workloads' backwards; their forwards already compile without it). Offline: 5776 -> 5040
# instructions, chunk loop spill loads 10 -> 12 a chunk. Prediction: backward within +-1 %.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
D=benchmarks/results/h200-2026-11-30-fiftysixth
timeout 300 python3 benchmarks/ab_scan_code.py --old $D/scan_base_8c87795.py --rounds 5 m1train-2.8b-packed-8x2K \
  m1train-2.8b-packed-64x256 m1train-2.8b-packed-mix > "$OUT/a/ab-code.txt" 2>&1
echo "ab code rc $?"; grep -E "^m1|ms|regs|difference|Error" "$OUT/a/ab-code.txt" | tail -21 | cut -c1-420
timeout 220 python3 benchmarks/ab_scan_flag.py --flag SEGMENTS_WHERE_CHAINED --rounds 5 m1train-2.8b-packed-8x2K \
  m1train-2.8b-packed-64x256 > "$OUT/a/ab-chained.txt" 2>&1
echo "ab chained rc $?"; tail -14 "$OUT/a/ab-chained.txt" | cut -c1-300
