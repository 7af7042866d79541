#!/usr/bin/env bash
# Sixteenth session, first GPU call: the forward's preparation launch (dt and its cumsums loaded by the sweeps)
# against the cumsum in the sweeps, alternating; its GPU tests; the offline loop mix on the GPU machine's Triton.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > "$OUT/env.txt"
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> "$OUT/env.txt"
for pre in "" 1; do for mode in "--late --prefetch" ""; do
  PRE_DECAYS=$pre python3 benchmarks/offline_ssd_forward.py $mode --sass "$OUT/fwd$pre.sass" 2>&1 | tail -1 | cut -c1-100
  python3 benchmarks/loop_stats.py "$OUT/fwd$pre.sass"
done; done > "$OUT/offline.txt" 2>&1
timeout 300 python3 benchmarks/ab_pre_decays.py 3 2>&1 | grep -v -i warn | tee "$OUT/ab-pre-decays.txt"
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py \
  -k "pre_decays or small_dt or real_shapes" 2>&1 | tee "$OUT/tests-fwd.txt" | tail -4
