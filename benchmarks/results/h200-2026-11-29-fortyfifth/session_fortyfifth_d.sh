#!/usr/bin/env bash
# Forty-fifth session, call 8: the new early-segment rule (_early_segment) on the GPU: the segment tests through the
# public path; the rule's picks against the previous rule's where calls 5-7 did not time them (1x256K, a training
# call at 1x32K, dim 1536), and batch 1 below the rule's 2048 tokens.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT/h"
timeout 90 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_selective_scan.py -k "gpu and (segment or public)" > "$OUT/h/tests-full.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/h/tests-full.txt" | tail -8 | tee "$OUT/h/tests.txt"
timeout 100 python3 benchmarks/ab_forward_configs.py --shape 1x1024-mixer --shape 1x32768-train -w m1-130m-1x32K \
  --shape 1x262144 --rounds 2 --config 1,8,1,32,128 --config 4,8,2,16 --config 1,8,1,32,1728 \
  --config 1,8,1,32,5376 2>&1 | grep -v -i warn | tee "$OUT/h/ab-new-rule.txt"
