#!/usr/bin/env bash
# Thirty-fifth session, call 4 (H100): the chain launch's carry again, its early and halves forms now loading the
# state after the hand-over (call 3 loaded it before the wait: 1x32K's chain +52 %); with and without D, dt_bias and
# softplus (a Mamba-2 layer's call has all three), 8x4K (late form) and 1x32K (halves); then a planted-fault-free
# rerun of the new test on the GPU.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
for o in "" "--options"; do
  timeout 170 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.CHAIN_CARRY --rounds 5 \
    --workload 8x4K --workload 1x32K $o --kernel _tiles_paths_kernel --kernel _dstates_kernel 2>&1 | grep -v Warn \
    | tee -a "$OUT/call4-ab-carry.txt"
done
timeout 100 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "chain_carry or halves" --full > "$OUT/call4-tests.txt" 2>&1
tail -3 "$OUT/call4-tests.txt"
