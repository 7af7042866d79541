#!/usr/bin/env bash
# Twenty-fifth session, call 9: the tiles kernel's pair products in two halves of their i tokens (K1: half of the fp32
# S^T tile and of L live at a time; offline 48 -> 12 B spilled) against whole (K0); backward alone, per kernel.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 250 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048,1x32768 --opts none,dz --profile \
  --variants tiles:K0,tiles:K1 2>&1 | grep -v Warn | grep -v warn_once | tee "$OUT/call9-ab-khalves.txt"
