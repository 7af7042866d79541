#!/usr/bin/env bash
# Fifty-first session, call 4: the final code (the training switches of both replays from every upper-case global of
# the backward's modules; a recording skips its inputs when it keeps nothing): the SSD backward file and the prepared
# calls' tests on the GPU, then the bench's SSD rows beside mamba_ssm, forward and training.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/d"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 10 \
  tests/ops/test_ssd_backward.py tests/test_prepared.py tests/test_launch.py > "$OUT/d/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/d/tests.txt" | tail -8
timeout 240 python3 -m flashssm bench -w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K \
  -w 2.7b-32x2K -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm 2>&1 \
  | grep -v -i warn > "$OUT/d/bench.txt"
grep -E "^flashssm |^mamba_ssm |^2.7b|^train" "$OUT/d/bench.txt"
