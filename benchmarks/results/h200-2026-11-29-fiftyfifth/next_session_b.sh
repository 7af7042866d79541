#!/usr/bin/env bash
# Ready for the next session (about 450 s): aa6b204 (the backward edge chunks' redundant k_hi guard dropped: offline,
# triton 3.6, the spilled pointers' two local loads leave the head of _segment_grad's tile loop) against 8c87795's
# scan.py. Prediction: packed 8 x 2K backward -0.5 to -1 % (EDGE_TILES_BWD's +0.8 % there taken back), 64 x ~256
# and the mix within noise; forwards unchanged (same code). Then the GPU's registers for both backward kernels
# (printed by ab_scan_code). The base comes from git (the device had the previous sessions' commits; where it lacks
# 8c87795, carry `git show 8c87795:flashssm/ops/selective_scan/scan.py` as an untracked file and point --old at it).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
git cat-file -e 8c87795:flashssm/ops/selective_scan/scan.py || { echo "the device's git lacks 8c87795"; exit 1; }
git show 8c87795:flashssm/ops/selective_scan/scan.py > /tmp/scan_8c87795.py
timeout 420 python3 benchmarks/ab_scan_code.py --old /tmp/scan_8c87795.py --rounds 7 m1train-2.8b-packed-8x2K \
  m1train-2.8b-packed-64x256 m1train-2.8b-packed-mix > "$OUT/b/ab-code.txt" 2>&1
echo "ab rc $?"; grep -E "^m1|ms|regs|difference|Error" "$OUT/b/ab-code.txt" | tail -18 | cut -c1-420
