#!/usr/bin/env bash
# Thirty-sixth session, call 10 (H100): the tiles kernel asking for its dH and dy lines into L2 at its start
# (TILES_PREFETCH) against not, training calls at 8x4K and 1x32K, without and with D, dt_bias and softplus; then the
# SSD backward's tiles tests on the GPU with it on.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
S=flashssm.ops.ssd.backward_tiles.TILES_PREFETCH
timeout 150 python3 benchmarks/ab_train_flag.py $S --rounds 7 --kernel _tiles_kernel 2>&1 | grep -v Warn \
  | tee "$OUT/call10-ab-prefetch.txt"
timeout 120 python3 benchmarks/ab_train_flag.py $S --rounds 5 --options --kernel _tiles_kernel 2>&1 | grep -v Warn \
  | tee "$OUT/call10-ab-prefetch-options.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "tiles or steep or every_option or varlen or error_figures" > "$OUT/call10-tests.txt" 2>&1
tail -3 "$OUT/call10-tests.txt"
