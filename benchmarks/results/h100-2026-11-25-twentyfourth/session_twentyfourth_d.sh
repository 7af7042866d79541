#!/usr/bin/env bash
# Twenty-fourth session, call 4: the call-3 test failure replayed (chain sweeps, ddt 2.97e-2 with seed 360355933), then
# the training bench on the final code (tiles chunk 128 in the atomic mode only) with mamba_ssm in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-twentyfourth
for seed in 360355933 1 2; do
  echo "seed $seed"; timeout 100 python3 $R/repro_chain_ddt.py $seed 2>&1 | grep -v Warn
done | tee "$OUT/call4-repro.txt"
FLASHSSM_TEST_SEED=360355933 timeout 100 python3 -m pytest -p no:cacheprovider -q tests/ops/test_ssd_backward.py \
  -k "test_gradients_match_reference and L257" 2>&1 | tee "$OUT/call4-tests-replay.txt" | grep -E "^FAILED|passed|failed"
timeout 200 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i flashssm-deterministic -i mamba_ssm 2>&1 | tee "$OUT/call4-bench.txt" | grep -E "^train|^flashssm|^mamba"
