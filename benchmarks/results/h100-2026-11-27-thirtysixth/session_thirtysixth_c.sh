#!/usr/bin/env bash
# Thirty-sixth session, call 3 (H100): the tiles' pair launch beside the chain launch, in a second stream
# (PAIRS_BESIDE_CHAIN), against after the paths launch: training calls alternating in one process, without and with
# D, dt_bias and softplus; then the SSD backward tests on the GPU (the new order is the default).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
S=flashssm.ops.ssd.backward_chain.PAIRS_BESIDE_CHAIN
timeout 170 python3 benchmarks/ab_train_flag.py $S --rounds 5 --peak --workload 8x4K --workload 1x32K \
  --workload 32x2K 2>&1 | grep -v Warn | tee "$OUT/call3-ab-beside.txt"
timeout 120 python3 benchmarks/ab_train_flag.py $S --rounds 5 --options --workload 8x4K --workload 1x32K 2>&1 \
  | grep -v Warn | tee "$OUT/call3-ab-beside-options.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "tiles or pair or steep or deterministic or halves or carry or every_option or error_figures or compile" \
  > "$OUT/call3-tests.txt" 2>&1
tail -4 "$OUT/call3-tests.txt"
