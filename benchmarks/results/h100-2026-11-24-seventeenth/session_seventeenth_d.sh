#!/usr/bin/env bash
# Seventeenth session, fourth GPU call: the entering states stored by the forward for a backward in sweeps
# (backward_chain.STATES_FROM_FORWARD): the SSD backward tests; test_every_option's clamp cases for many seeds with
# the states stored and recomputed (one of them failed once in call 3); the 1x2K training call alternating both
# forms in one process; the 1x2K bench against mamba_ssm.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  2>&1 | tee "$OUT/call4-tests-bwd.txt" | grep -E "^FAILED|passed|failed|SEED"
timeout 150 python3 -m benchmarks.repeat_ssd_backward_options 40 --states 2>&1 | grep -v Warn | tee "$OUT/call4-repeat.txt"
timeout 150 python3 benchmarks/host_small_train.py --workloads 1x2048 --states 4 2>&1 | grep -v Warn \
  | tee "$OUT/call4-host-small.txt"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w 2.7b-1x2K -i flashssm -i mamba_ssm 2>&1 | grep -A4 "^train\|^2.7b" | grep -v "^peak"
cp "$OUT/bench.txt" "$OUT/call4-bench.txt"; rm -f "$OUT/bench.png" "$OUT/bench.txt" "$OUT/bench.json"
