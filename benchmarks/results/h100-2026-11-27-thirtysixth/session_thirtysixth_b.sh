#!/usr/bin/env bash
# Thirty-sixth session, call 2 (H100): the decays of the tile pairs whose i is in a later block than j as an outer
# product exp(cs_i - c) exp(c - cs_j) (SEPARABLE_DECAYS) in the tiles kernel and the pair launch, against every decay
# its own exponential: training calls alternating in one process (8x4K: chunks of 128, one such pair of three; 1x32K:
# chunks of 256, six of ten), without and with D, dt_bias and softplus; then the SSD backward tests of the tiles on
# the GPU (bf16 there) and the bf16 error figures.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
S=flashssm.ops.ssd.backward_tiles.SEPARABLE_DECAYS
timeout 150 python3 benchmarks/ab_train_flag.py $S --rounds 5 --workload 8x4K --workload 1x32K 2>&1 | grep -v Warn \
  | tee "$OUT/call2-ab-separable.txt"
timeout 150 python3 benchmarks/ab_train_flag.py $S --rounds 5 --options --workload 8x4K --workload 1x32K 2>&1 \
  | grep -v Warn | tee "$OUT/call2-ab-separable-options.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "tiles or pair or steep or deterministic or halves or carry or error_figures" -s > "$OUT/call2-tests.txt" 2>&1
grep -E "passed|failed|rel err|error" "$OUT/call2-tests.txt" | tail -30
