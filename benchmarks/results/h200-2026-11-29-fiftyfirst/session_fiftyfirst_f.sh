#!/usr/bin/env bash
# Fifty-first session, call 6: causal_conv1d and rmsnorm_gated replayed too, empty_like recorded, refused keys kept.
# (1) test_prepared + test_launch on the GPU; (2) ab_scan_host.py for conv1d and norm at 1x128 and 1x1024.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/f"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 90 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/test_prepared.py tests/test_launch.py > "$OUT/f/tests-prepared.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/f/tests-prepared.txt" | tail -8
timeout 60 python3 benchmarks/ab_scan_host.py --op conv1d --op norm --seqlen 128 --seqlen 1024 --rounds 3 \
  --calls 200 > "$OUT/f/ab-ops-host.txt" 2>&1
cat "$OUT/f/ab-ops-host.txt"
