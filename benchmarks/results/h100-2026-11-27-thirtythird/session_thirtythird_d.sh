#!/usr/bin/env bash
# Thirty-third session, call 4 (H100, carry .whl): with the one-wave run-time spans, (1) the 1M-token forward check
# against float64 (three spans of 1366 chunks a sequence there: offsets within a span up to 1.8e9), (2) the bench at
# batch 1 with the peers, and the training call at 1x32K (its forward takes the one wave too).
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 150 python3 benchmarks/check_huge.py ssd-fwd --ssd-fwd-tokens 1048576 2>&1 | grep -v Warn | tail -5 \
  | tee "$OUT/call4-check1m.txt"
timeout 240 python3 -m flashssm bench --json "$OUT/call4-bench.json" -w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K \
  -w 2.7b-1x128K -w 2.7b-1x2K -i flashssm -i mamba_ssm -i fla > "$OUT/call4-bench.txt" 2>&1
grep -E "^device|^ceil|^2.7b|^flashssm |^mamba|^fla " "$OUT/call4-bench.txt"
timeout 150 python3 -m flashssm bench --json "$OUT/call4-bench-train.json" -w train-2.7b-1x32K -w train-2.7b-8x4K \
  -i flashssm -i mamba_ssm > "$OUT/call4-bench-train.txt" 2>&1
grep -E "^device|^train|^flashssm |^mamba" "$OUT/call4-bench-train.txt"
