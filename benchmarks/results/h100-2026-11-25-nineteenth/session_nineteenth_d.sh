#!/usr/bin/env bash
# Nineteenth session, fourth GPU call: the selective-scan backward where mamba_ssm's CUDA scan beat it in call 3
# (dim 1536 at 1x8K, dstate 128 at 1x1K): lanes, segments and a register cap around the picked configuration.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
s=1x8192x1536
timeout 280 python3 benchmarks/tune_scan_segments.py --backward $s:4,1024 $s:4,2048 $s:4,2752 $s:4,4096 $s:4,0 \
  $s:4,832 $s:8,1024 $s:8,2048 $s:8,0 $s:4,1664,168 $s:4,1024,168 2>&1 | grep -v Warn | tee "$OUT/call4-tune-130m.txt"
s=1x1024x5120
timeout 280 python3 benchmarks/tune_scan_segments.py --dstate 128 --backward $s:16,0 $s:32,0 $s:8,0 $s:16,0,168 \
  $s:16,512 2>&1 | grep -v Warn | tee "$OUT/call4-tune-n128.txt"
