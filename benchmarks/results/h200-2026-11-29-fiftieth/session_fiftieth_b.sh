#!/usr/bin/env bash
# Fiftieth session, call 2: every direct launch now calls the compiled kernel's launcher itself (no Triton runner):
# the SSD backward file whole (owed since the forty-ninth session's fixes) beside the models, compile-ahead, step,
# conv1d and norm files; then the training rows of the bench beside mamba_ssm.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 280 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_ssd_backward.py > "$OUT/b/tests-ssd-backward.txt" 2>&1 &
timeout 280 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 6 \
  tests/models tests/test_compile_ahead.py tests/ops/test_step.py tests/ops/test_conv1d.py tests/ops/test_norm.py \
  tests/ops/test_dispatch.py > "$OUT/b/tests-others.txt" 2>&1 &
wait
for f in "$OUT"/b/tests-*.txt; do echo "$f"; grep -E "FAILED|ERROR|passed|failed" "$f" | tail -8; done
timeout 200 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i mamba_ssm 2>&1 | grep -v -i warn | tee "$OUT/b/bench-train.txt" | grep -E "^flashssm |^mamba_ssm |^train"
