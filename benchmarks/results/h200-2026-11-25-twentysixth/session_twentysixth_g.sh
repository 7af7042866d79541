#!/usr/bin/env bash
# Twenty-sixth session, call 7: the pair launch at three stages (the default now for 16-bit 64 x 128 tiles) against two
# (o2), backward alone; the GPU tests of the SSD backward file; the training bench, peers in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/device7.txt" 2>&1
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call7-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 330 python3 -m flashssm bench --json "$OUT/call7-bench.json" -w train-2.7b-1x2K -w train-2.7b-8x4K \
  -w train-2.7b-1x32K -i flashssm -i flashssm-deterministic -i mamba_ssm 2>&1 \
  | tee "$OUT/call7-bench.txt" | grep -E "^train|^flashssm|^mamba|^ "
timeout 150 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048,1x32768 --opts none,dz \
  --variants tiles:o2,tiles 2>&1 | grep -v Warn | grep -v warn_once | tee "$OUT/call7-ab-stages.txt"
