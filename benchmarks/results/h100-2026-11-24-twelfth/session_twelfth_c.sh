#!/usr/bin/env bash
# Twelfth session, third GPU call: the tiles form with the pair sums in the pair launch and dstate slices for the
# state parts (no spills offline). Locate the headdim-32 illegal access (compute-sanitizer), GPU tests, errors, A/B.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
echo "sanitizer: $CS" | tee "$OUT/sanitizer.txt"
timeout 60 python3 benchmarks/probe_tiles_shapes.py 2>&1 | grep -v -i warn | tee -a "$OUT/sanitizer.txt"
[ -n "$CS" ] && timeout 120 $CS --tool memcheck --print-limit 5 python3 benchmarks/probe_tiles_shapes.py 2 2>&1 \
  | grep -v -i warn | head -60 >> "$OUT/sanitizer.txt"
timeout 150 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -k tiles -rf 2>&1 \
  | tee "$OUT/tests-tiles.txt" | tail -6
V=sweeps,tiles,tiles:round,tiles:w8:round,tiles:round:h8,tiles:round:h40,tiles:round:v8
timeout 80 python3 benchmarks/ab_tiles.py 1 --errors --shapes 1x2048 --opts d --variants sweeps,tiles,tiles:round 2>&1 \
  | grep -v -i warn | tee "$OUT/tiles-errors.txt"
timeout 200 python3 benchmarks/ab_tiles.py 3 --profile --shapes 8x4096,1x32768 --opts none --variants $V 2>&1 \
  | grep -v -i warn | tee "$OUT/ab-tiles.txt"
