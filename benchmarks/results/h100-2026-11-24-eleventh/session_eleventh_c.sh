#!/usr/bin/env bash
# Eleventh session, third GPU call: dD summed by the gradient chain's launch, and that launch's sub-chunk and warps
# (tune_ssd_backward.py --chain-launches); the A/B against the form before the session (ab_chain_launch.py, with
# D, dt_bias, softplus and with z too); the SSD backward tests on CUDA. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/tune_ssd_backward.py --chain-launches 2>&1 | grep -v -i warn | tee "$OUT/chain-launches.txt"
timeout 150 python3 benchmarks/ab_chain_launch.py 3 --shapes 1x32768,8x4096 --opts d,dz --variants inline,dd,dstates 2>&1 \
  | grep -v -i warn | tee "$OUT/ab-launch.txt"
timeout 230 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -rf 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -4
