#!/usr/bin/env bash
# Seventeenth session, fifth GPU call: the failing clamp case (seed 33) dumped for a look on the CPU.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=$OUT timeout 120 python3 benchmarks/results/h100-2026-11-24-seventeenth/dump_seed33.py 2>&1 | grep -v Warn
