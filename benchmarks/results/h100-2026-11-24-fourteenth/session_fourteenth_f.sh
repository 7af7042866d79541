#!/usr/bin/env bash
# Fourteenth session, sixth GPU call: the paths launch with its scales folded into split operands (F1: no fresh
# product a head) and in blocks of 128 tokens (T128: H and dH loaded half as often), register caps (gN), against
# the default (a fresh product a head, blocks of 64, 128 registers).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none --profile \
  --variants tiles,tiles:F1,tiles:F1:g255,tiles:F1:T128,tiles:F1:T128:g168,tiles:F1:T128:g255,tiles:T128:g255 2>&1 \
  | grep -v -i warn | tee "$OUT/ab-fold.txt"
