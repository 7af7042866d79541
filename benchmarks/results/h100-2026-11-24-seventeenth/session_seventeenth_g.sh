#!/usr/bin/env bash
# Seventeenth session, seventh GPU call: _runtime.launch takes Triton's own launch while torch.compile traces
# (test_mixer_compiles_without_graph_breaks failed in call 6: the direct launch's raw-stream read broke the graph in
# causal_conv1d's autograd.Function); the model tests and the launch tests on the GPU.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/models tests/test_launch.py \
  tests/ops/test_conv1d.py tests/ops/test_norm.py 2>&1 | tee "$OUT/call7-tests.txt" | grep -E "^FAILED|passed|failed|SEED"
