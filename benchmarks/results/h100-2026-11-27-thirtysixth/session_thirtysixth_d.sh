#!/usr/bin/env bash
# Thirty-sixth session, call 4 (H100): few chains (batch 1, 2x16K, 4x8K), the chain launch's suffix form (spans of 512
# tokens handed over early, one share live, dH parked per chunk) with the tiles in chunks of 128 ((True, 512)) or of
# the forward's 256 ((False, 512)), against today's ((False, 0): tiles at 256, the chain's halves): training calls
# alternating in one process, peaks; bf16 gradient errors against float64 at 1x8K; the suffix tests on the GPU.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
S=flashssm.ops.ssd.backward_chain.FEW_CHAINS
V="--value (False,0) --value (True,512) --value (False,512)"
timeout 220 python3 benchmarks/ab_train_flag.py $S $V --rounds 5 --peak --workload 1x32K --workload 4x8K \
  --workload 1x8K 2>&1 | grep -v Warn | tee "$OUT/call4-ab-suffix.txt"
timeout 120 python3 benchmarks/ab_train_flag.py $S $V --rounds 5 --peak --options --workload 1x32K 2>&1 \
  | grep -v Warn | tee "$OUT/call4-ab-suffix-options.txt"
timeout 90 python3 benchmarks/ab_train_flag.py $S $V --rounds 3 --options --z --workload 1x32K 2>&1 \
  | grep -v Warn | tee "$OUT/call4-ab-suffix-z.txt"
timeout 100 python3 benchmarks/grad_error_switch.py $S $V --shape 1x8192 --options --seeds 2 2>&1 | grep -v Warn \
  | tee "$OUT/call4-grad-errors.txt"
timeout 100 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py --full \
  -k "suffix or chain_carry or halves or chain_launch_spans" > "$OUT/call4-tests.txt" 2>&1
tail -3 "$OUT/call4-tests.txt"
