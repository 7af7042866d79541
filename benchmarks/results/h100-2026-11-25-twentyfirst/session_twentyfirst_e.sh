#!/usr/bin/env bash
# Twenty-first session, fifth GPU call: a lane's states in groups of 4 consecutive ones (scan.STATE_GROUP), so that
# the forward's stored states (and the backward's loads of them) move as 16-byte vectors of whole sectors. A/B in one
# process against the previous layout (both with the loads ahead).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 330 python3 benchmarks/ab_scan_ahead.py --variants bc+tile,bc+tile+group --rounds 5 m1train-2.8b-8x2K \
  m1train-130m-1x8K m1train-n128-1x1K m1train-2.8b-1x32K > "$OUT/call5-ab-group.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call5-ab-group.txt" | tail -30
