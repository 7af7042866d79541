#!/usr/bin/env bash
# Seventeenth session, third GPU call: the small training calls' host path, the previous commit (57f9c3b, copied
# into prev/ and carried) against this tree, alternating processes; the SSD backward tests on the GPU; the bench of
# the 1x2K cases against mamba_ssm.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
for round in 1 2 3; do
  PYTHONPATH=$PWD/prev:$PWD timeout 120 python3 benchmarks/host_small_train.py --label "prev r$round" 2>&1 | grep -v Warn
  PYTHONPATH=$PWD timeout 120 python3 benchmarks/host_small_train.py --label "new  r$round" 2>&1 | grep -v Warn
done | tee "$OUT/call3-host-small.txt"
PYTHONPATH=$PWD timeout 280 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  2>&1 | tee "$OUT/call3-tests-bwd.txt" | tail -3
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w 2.7b-1x2K -i flashssm -i mamba_ssm 2>&1 | grep -A4 "^train\|^2.7b" | grep -v "^peak"
cp "$OUT/bench.txt" "$OUT/call3-bench.txt"; rm -f "$OUT/bench.png" "$OUT/bench.txt" "$OUT/bench.json"
