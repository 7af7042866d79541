#!/usr/bin/env bash
# Eighteenth session, first GPU call: the deterministic mode's tiles (sums in slots, no float atomics). The GPU tests
# of the deterministic paths (bit-identical repeats at real shapes, gradients against float64), an A/B of the
# deterministic forms (tiles / chunk-parallel / the atomic default) in one process, the training bench with the
# deterministic column against mamba_ssm, then the whole SSD backward test file.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } | tee "$OUT/env.txt"
timeout 150 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  -k "deterministic" 2>&1 | tee "$OUT/call1-tests-det.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 150 python3 benchmarks/ab_deterministic.py --rounds 3 2>&1 | grep -v Warn | tee "$OUT/call1-ab-det.txt"
timeout 170 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i flashssm-deterministic -i mamba_ssm 2>&1 | tee "$OUT/call1-bench.txt" | tail -25
timeout 230 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  2>&1 | tee "$OUT/call1-tests-bwd.txt" | grep -E "^FAILED|passed|failed|SEED"
