#!/usr/bin/env bash
# Fifty-fifth session, call 2 (about 540 s): the A/B of the two shared-rows switches written in the fifty-fourth session
# (off, never timed), and EDGE_TILES_BWD at 8 x 2K with 9 rounds. Call 1 ran the whole selective-scan GPU file (all
# 125 passed, the shared-rows clean-chunks tests among them), so no pytest here.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 220 python3 benchmarks/ab_scan_flag.py --flag SHARED_CHUNKS_DENSE --rounds 5 m1train-2.8b-packed-mix \
  m1train-2.8b-packed-64x256 > "$OUT/b/ab-clean.txt" 2>&1
echo "ab clean rc $?"; tail -12 "$OUT/b/ab-clean.txt"
timeout 150 python3 benchmarks/ab_scan_flag.py --flag SHARED_TILES_DENSE --rounds 5 m1train-2.8b-packed-mix \
  > "$OUT/b/ab-clean-fwd.txt" 2>&1
echo "ab clean fwd rc $?"; tail -6 "$OUT/b/ab-clean-fwd.txt"
timeout 150 python3 benchmarks/ab_scan_flag.py --flag EDGE_TILES_BWD --rounds 9 m1train-2.8b-packed-8x2K \
  > "$OUT/b/ab-edge.txt" 2>&1
echo "ab edge rc $?"; tail -6 "$OUT/b/ab-edge.txt"
