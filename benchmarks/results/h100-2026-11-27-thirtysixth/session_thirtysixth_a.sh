#!/usr/bin/env bash
# Thirty-sixth session, call 1 (H100): the tiles backward in chunks of 128 with few chains too (batch 1, 2x16K, 4x8K:
# TILES_CHUNK_FEW_CHAINS), against the forward's 256 there: training calls alternating in one process, each kernel's
# time, the gradients' differences and a call's peak memory; without options, with D, dt_bias and softplus, and with z.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
S=flashssm.ops.ssd.backward_chain.TILES_CHUNK_FEW_CHAINS
timeout 240 python3 benchmarks/ab_train_flag.py $S --rounds 5 --peak --workload 1x32K --workload 4x8K \
  --workload 2x16K --workload 1x8K 2>&1 | grep -v Warn | tee "$OUT/call1-ab-few-chains.txt"
timeout 150 python3 benchmarks/ab_train_flag.py $S --rounds 5 --peak --options --workload 1x32K --workload 4x8K \
  2>&1 | grep -v Warn | tee "$OUT/call1-ab-few-chains-options.txt"
timeout 120 python3 benchmarks/ab_train_flag.py $S --rounds 3 --peak --options --z --workload 1x32K \
  2>&1 | grep -v Warn | tee "$OUT/call1-ab-few-chains-z.txt"
