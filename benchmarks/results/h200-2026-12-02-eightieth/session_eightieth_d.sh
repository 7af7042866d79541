#!/usr/bin/env bash
# Eightieth session, call 4 (the device time left after calls 1-3): the bench of the remaining Mamba-1 training
# workloads with SHARED_TOKENS_BWD on.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
timeout 250 python3 -m flashssm bench -w m1train-2.8b-2x16K -w m1train-2.8b-packed-8x2K -w m1-2.8b-1x32K -i flashssm \
  > "$OUT/bench.txt" 2>&1
echo "bench rc $?" >> "$OUT/bench.txt"
tail -20 "$OUT/bench.txt"
