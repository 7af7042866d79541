#!/usr/bin/env bash
# Thirty-fifth session, call 3 (H100): the decay gradient's carry <dH, H> from the chain launch as it stores dH
# (CHAIN_CARRY) against the paths launch's second read of dH: training calls at 8x4K, 1x32K and 32x2K, alternating,
# with the chain and paths launches' times; then the SSD backward's tiles, chain and deterministic tests on the GPU.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 240 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.CHAIN_CARRY --rounds 5 \
  --workload 8x4K --workload 1x32K --workload 32x2K \
  --kernel _tiles_paths_kernel --kernel _dstates_kernel 2>&1 | grep -v Warn | tee "$OUT/call3-ab-carry.txt"
timeout 100 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.CHAIN_CARRY --rounds 3 \
  --workload 8x4K --options --kernel _tiles_paths_kernel --kernel _dstates_kernel 2>&1 | grep -v Warn \
  | tee "$OUT/call3-ab-carry-options.txt"
timeout 220 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "tiles or paths or deterministic or states or chain or halves or span" > "$OUT/call3-tests.txt" 2>&1
tail -5 "$OUT/call3-tests.txt"
