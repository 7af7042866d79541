#!/usr/bin/env bash
# Eighty-third session, call 1: the early publish's last spans gathered in the spare slots (`forward.ONE_WAVE_TAILS`,
# the Gluon kernel's TAILS). Batch 1 of the 2.7B shape runs 240 programs in 264 slots; with the tails, 260 programs
# of spans ~7-9 % shorter. Prediction: 1 x 128K -7 %, 1 x 32K -7 %, 1 x 8K -9 % of the forward's kernel; nothing at
# 8 x 4K (late publish). First the A/B (alternating, medians of 5), then the new and nearby GPU tests, the training
# call at 1 x 32K (its forward takes the same plan), and the 1M-token check against float64 with the tails on.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt" 2>&1
timeout 170 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward.ONE_WAVE_TAILS --value False \
  --value True --workload 2.7b-1x128K --workload 2.7b-1x32K --workload 2.7b-1x8K --rounds 5 --kernels \
  > "$OUT/ab-forward.txt" 2>&1
echo "ab forward rc $?"; grep -v -i warn "$OUT/ab-forward.txt" | tail -30 | cut -c1-200
timeout 190 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 7 \
  tests/ops/test_ssd_forward.py -k "tails or gluon_run_time_span or one_wave or gluon_sweep_states" \
  > "$OUT/tests-tails.txt" 2>&1
echo "tests rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests-tails.txt" | tail -20 | cut -c1-250
timeout 100 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.forward.ONE_WAVE_TAILS --value False --value True \
  --workload 1x32K --rounds 5 > "$OUT/ab-train.txt" 2>&1
echo "ab train rc $?"; grep -v -i warn "$OUT/ab-train.txt" | tail -14 | cut -c1-200
timeout 80 python3 benchmarks/check_huge.py ssd-fwd --ssd-fwd-tokens 1048576 > "$OUT/huge-1M.txt" 2>&1
echo "huge rc $?"; tail -5 "$OUT/huge-1M.txt" | cut -c1-250
