#!/usr/bin/env bash
# Thirty-fourth session, call 4 (H100, carry .whl), the final code (states stored once C.H is issued, STATES_AT 1):
# (1) the 1 x 1M-token forward + backward check against float64 in pieces (the forward now stores the tiles' states:
# 5.4 GB of them, int64 offsets); (2) the training bench with mamba_ssm in the same run.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 170 python3 -m flashssm bench --json "$OUT/call4-bench-train.json" -w train-2.7b-8x4K -w train-2.7b-1x32K \
  -w train-2.7b-1x2K -i flashssm -i flashssm-deterministic -i mamba_ssm > "$OUT/call4-bench-train.txt" 2>&1
grep -E "^device|^train|^flashssm|^mamba" "$OUT/call4-bench-train.txt"
timeout 300 python3 benchmarks/check_huge.py ssd-bwd 2>&1 | grep -v Warn | tail -5 | tee "$OUT/call4-check1m-bwd.txt"
