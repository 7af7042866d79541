#!/usr/bin/env bash
# Nineteenth session, first GPU call: the eighteenth session's final test versions on the GPU (never run there), and
# where the deterministic tiles' extra time goes (every kernel of the backward, both modes, 8x4K and 1x32K).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/env.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> "$OUT/env.txt" 2>&1
timeout 150 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096,1x32768 --variants all --deterministic 2>&1 \
  | grep -v Warn | tee "$OUT/call1-costs-det.txt"
timeout 330 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call1-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -30
