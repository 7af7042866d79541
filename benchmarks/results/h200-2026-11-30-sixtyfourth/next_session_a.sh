#!/usr/bin/env bash
# For the next session (not run; about 300 s; carry .whl with the mamba_ssm and fla wheels built as shared/ANCHORS.md
# says): the layer workloads (31f86d8: D a value a head, dt_bias, softplus, dt in bf16, as a Mamba-2 layer calls
# ssd_scan) beside mamba_ssm, never run on a GPU; and the bench's test of them there.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/bench"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
timeout 60 python3 -m pytest -o addopts=-ra -p no:cacheprovider -q tests/bench/test_bench.py -k layer \
  > "$OUT/tests.txt" 2>&1
echo "== tests rc $?"; tail -1 "$OUT/tests.txt"
timeout 200 python3 -m flashssm bench -w 2.7b-8x4K-layer -w train-2.7b-8x4K-layer -w train-2.7b-1x32K-layer \
  -i flashssm -i flashssm-deterministic -i mamba_ssm -i fla > "$OUT/bench/layer.txt" 2>&1
echo "== bench rc $?"; grep -v -i warn "$OUT/bench/layer.txt" | tail -24 | cut -c1-200
