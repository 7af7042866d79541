#!/usr/bin/env bash
# Eightieth session, call 2: SHARED_TOKENS_BWD on in the package (call 1: the backward -10.9 % at 8x2K, -6.7 % at
# 1x32K, -3.5 % packed; call 1's targeted tests ran out of their 150 s while compiling). The selective scan's GPU tests
# with it on (the whole file and test_prepared's selective-scan cases, eight workers), then the bench of the Mamba-1
# training and forward workloads.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
python3 -c "import xdist" 2>/dev/null && N="-n 8" || N=""
timeout 360 python3 -m pytest -q -p no:cacheprovider -o addopts= $N tests/ops/test_selective_scan.py \
  tests/test_prepared.py -k "selective_scan or tokens_shared or output_shared or segments or packed or lanes or gpu" \
  > "$OUT/tests.txt" 2>&1
echo "tests rc $?" >> "$OUT/tests.txt"
timeout 200 python3 -m flashssm bench -w m1train-2.8b-8x2K -w m1train-2.8b-1x32K -w m1-2.8b-8x2K -i flashssm \
  > "$OUT/bench.txt" 2>&1
echo "bench rc $?" >> "$OUT/bench.txt"
tail -25 "$OUT/tests.txt"; tail -30 "$OUT/bench.txt"
