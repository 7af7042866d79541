#!/usr/bin/env bash
# For the sixty-second session's first device call (about 540 s): what the sixty-first session owes on the GPU. The
# tests added or changed after its device time was spent (the fp16 negative-dt fix in the Gluon form, the fp16 NaN
# path), then the fp16 bench workloads beside the peers (needs the peers' wheels: carry .whl, install as ANCHORS.md
# says; without them flashssm's rows alone).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
P="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q"
timeout 240 $P tests/ops/test_ssd_forward.py -k "negative_dt or keeps_its_digits or public_path_and_nan or near_0" \
  > "$OUT/tests-owed.txt" 2>&1
echo "== owed tests rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-owed.txt" | tail -8 | cut -c1-400
timeout 280 python3 -m flashssm bench -w 2.7b-8x4K-fp16 -w 2.7b-1x32K-fp16 -w train-2.7b-8x4K-fp16 -i flashssm -i mamba_ssm \
  -i fla > "$OUT/bench-fp16.txt" 2>&1
echo "== bench rc $?"; grep -v -i warn "$OUT/bench-fp16.txt" | tail -30 | cut -c1-200
