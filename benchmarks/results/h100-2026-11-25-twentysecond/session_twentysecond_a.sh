#!/usr/bin/env bash
# Twenty-second session, first GPU call: the stored states ordered by the backward's lanes (ckpt_layout), so that
# every forward layout stores them as 16-byte vectors (offline sm_90: the two-lane forward 16 STG.E -> 2 STG.E.128 a
# chunk, dstate 128's 17 STG -> 5 and 76 -> 0 spilled bytes). A/B against a5590dd (scan_a5590dd.py: made with
# `git show a5590dd:flashssm/ops/selective_scan/scan.py`, not kept).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-twentysecond
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 560 python3 benchmarks/ab_scan_code.py --old $R/scan_a5590dd.py --rounds 5 m1train-2.8b-8x2K \
  m1train-130m-1x8K m1train-2.8b-1x32K m1train-n128-1x1K > "$OUT/call1-ab-lane-runs.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call1-ab-lane-runs.txt" | tail -24
