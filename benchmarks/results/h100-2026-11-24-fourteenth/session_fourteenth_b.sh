#!/usr/bin/env bash
# Fourteenth session, second GPU call: the tiles' state paths (dB's and dC's state parts, inpath, carry) as a launch
# of their own that sums over heads before its atomics, against the tiles kernel's per-head atomics (p0), with the
# chain launch in spans or not (c0); its knobs (heads a program, warps, register cap); bf16 errors of both forms;
# the backward's GPU tests; the training bench against mamba_ssm (carry .whl).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 280 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none --profile --errors \
  --variants tiles:c0:p0,tiles:p0,tiles,tiles:r128,tiles:e40,tiles:e20,tiles:g255,tiles:f4:g255 2>&1 \
  | grep -v -i warn | tee "$OUT/ab-paths.txt"
timeout 100 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096 --opts d,dz --variants tiles:c0:p0,tiles 2>&1 \
  | grep -v -i warn | tee -a "$OUT/ab-paths.txt"
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -4
timeout 60 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_ssd_backward.py -k bf16_error_figures 2>&1 \
  | grep "relative error" | tee "$OUT/bwd-errors.txt"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm \
  2>&1 | tail -14
rm -f "$OUT/bench.png"
