#!/usr/bin/env bash
# Fifteenth session, first GPU call: the early publish's own-state sweep from the chunk's end with asynchronous
# products (forward.OWN_REVERSED) against the previous form, at batch 1 (forward, state recompute, training call);
# the forward's GPU tests (both forms); the offline view of both.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > "$OUT/env.txt"
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> "$OUT/env.txt"
timeout 260 python3 benchmarks/ab_own_state.py 3 2>&1 | grep -v -i warn | tee "$OUT/ab-own-state.txt"
timeout 280 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py 2>&1 \
  | tee "$OUT/tests-fwd.txt" | tail -4
