#!/usr/bin/env bash
# Sixty-fifth session, call 5 (about 300 s; carry .whl): the bench of the committed tree (the chain launch's row sums,
# the Gluon forward's D from x_r): the layer workloads and the training workloads beside mamba_ssm and fla.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/bench"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
timeout 280 python3 -m flashssm bench -w 2.7b-8x4K-layer -w train-2.7b-8x4K-layer -w train-2.7b-1x32K-layer \
  -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm -i fla > "$OUT/bench/layer-train.txt" 2>&1
echo "== bench rc $?"; grep -v -i warn "$OUT/bench/layer-train.txt" | tail -40 | cut -c1-200
