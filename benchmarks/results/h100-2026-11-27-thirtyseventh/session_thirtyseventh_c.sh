#!/usr/bin/env bash
# Thirty-seventh session, call 3: the tiles kernel as a loop over a block of heads with every block of the chunk row
# unrolled (_tiles_heads_kernel), against the program per (chunk row, head, block); heads a program; its register cap;
# then the tiles tests on the GPU with it on.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
M=flashssm.ops.ssd.backward_tiles
K="--kernel _tiles_kernel --kernel _tiles_heads_kernel"
timeout 200 python3 benchmarks/ab_train_flag.py $M.TILES_HEADS_LOOP --value False --value True \
  --workload 8x4K --workload 1x32K $K > "$OUT/call3-ab-loop.txt" 2>&1
timeout 200 python3 benchmarks/ab_train_flag.py $M.TILES_HEADS_MAX --value 8 --value 2 --value 4 --value 16 \
  --workload 8x4K --workload 1x32K $K > "$OUT/call3-ab-heads.txt" 2>&1
timeout 200 python3 benchmarks/ab_train_flag.py $M.TILES_MAXNREG_NO_PATHS --value 128 --value 168 \
  --workload 8x4K --workload 1x32K $K > "$OUT/call3-ab-cap.txt" 2>&1
timeout 240 python3 -m pytest -p no:cacheprovider -n 8 -o addopts="-ra" tests/ops/test_ssd_backward.py -k "tiles" \
  > "$OUT/call3-tests.txt" 2>&1
cat "$OUT"/call3-ab-*.txt | grep -v -i warn; tail -3 "$OUT/call3-tests.txt"
