#!/usr/bin/env bash
# Thirty-sixth session, call 6 (H100): the chain launch's suffix form with longer spans (512, 1024, 2048 tokens: 4, 8,
# 16 chunks of 128 a program) under the tiles in chunks of 128 at batch 1, against today's; and the gradient errors.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
S=flashssm.ops.ssd.backward_chain.FEW_CHAINS
V="--value (False,0) --value (True,512) --value (True,1024) --value (True,2048)"
timeout 150 python3 benchmarks/ab_train_flag.py $S $V --rounds 5 --workload 1x32K --kernel _dstates_kernel 2>&1 \
  | grep -v Warn | tee "$OUT/call6-ab-suffix-spans.txt"
timeout 120 python3 benchmarks/ab_train_flag.py $S $V --rounds 5 --options --workload 1x32K \
  --kernel _dstates_kernel 2>&1 | grep -v Warn | tee "$OUT/call6-ab-suffix-spans-options.txt"
timeout 80 python3 benchmarks/grad_error_switch.py $S $V --shape 1x8192 --options --seeds 1 2>&1 | grep -v Warn \
  | tee "$OUT/call6-grad-errors.txt"
