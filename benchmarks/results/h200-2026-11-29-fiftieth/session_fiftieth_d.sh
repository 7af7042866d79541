#!/usr/bin/env bash
# Fiftieth session, call 4: (1) the selective scan's test file on the GPU (every direct launch now calls the compiled
# kernel's launcher itself; the SSD, models, conv1d, norm, step and dispatch files passed in calls 1-3); (2) the bench's
# SSD rows beside mamba_ssm, forward and training, for the session's figures.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/d"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 320 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 12 \
  tests/ops/test_selective_scan.py > "$OUT/d/tests-selective-scan.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/d/tests-selective-scan.txt" | tail -8
timeout 230 python3 -m flashssm bench -w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K \
  -w 2.7b-32x2K -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm 2>&1 \
  | grep -v -i warn > "$OUT/d/bench.txt"
grep -E "^flashssm |^mamba_ssm |^2.7b|^train" "$OUT/d/bench.txt"
