#!/usr/bin/env bash
# Forty-ninth session, call 1: the forty-eighth session's two leftovers.
# 1. rmsnorm_gated's tests on the GPU (the whole file: its device fixture is cuda there) (its backward now launches through _runtime.launch; not run on the GPU against the
#    reference since).
# 2. next_session_a.sh: the Mamba-2 130M model's second training step with compile-ahead on (212-227 ms against 81 off,
#    unexplained), split into forward and backward, full collections counted, and with a collection after step 1.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
timeout 200 python3 -m pytest tests/ops/test_norm.py -q -o addopts="-ra" -p no:cacheprovider 2>&1 \
  | tail -n 25 | tee "$OUT/tests-norm.txt"
OUT=$OUT bash benchmarks/results/h200-2026-11-29-fortyeighth/next_session_a.sh
