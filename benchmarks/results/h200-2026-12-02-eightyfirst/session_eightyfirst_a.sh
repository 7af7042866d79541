#!/usr/bin/env bash
# Eighty-first session, call 1: the eightieth session's prepared run (next_session_a.sh), its first half.
# 1. The selective scan's whole GPU test file with SHARED_TOKENS_BWD on (its default since a25233c), -v so that a
#    limit leaves the list of what ran.
# 2. (session_eightyfirst_b.sh) mamba_ssm's CUDA selective scan built from the carried sdist, the Mamba-1 bench beside it.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
timeout 420 python3 -m pytest -v -p no:cacheprovider -o addopts= -n 8 tests/ops/test_selective_scan.py \
  > "$OUT/tests-selective-scan.txt" 2>&1
echo "rc $?" >> "$OUT/tests-selective-scan.txt"
echo "passed $(grep -cE ' PASSED' "$OUT/tests-selective-scan.txt")"
grep -E "FAILED|ERROR|rc |passed|failed" "$OUT/tests-selective-scan.txt" | tail -8
