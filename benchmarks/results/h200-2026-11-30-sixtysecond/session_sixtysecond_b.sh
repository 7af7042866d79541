#!/usr/bin/env bash
# Sixty-second session, call 2 (about 480 s): call 1's forward tests past its limit (the Gluon kernel's scaled store in
# the early form, the packed and NaN paths, the owed fp16 NaN test) beside the ssd_scan fuzz at model shapes, then the
# fp16 bench workloads beside the peers (owed by the sixty-first session; fp16 training now with scaled states).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD timeout 170 python3 -m tests.fuzz.fuzz --shapes model --ops ssd_scan --seed 6201 --budget 140 \
  --verbose > "$OUT/fuzz-ssd-6201.txt" 2>&1 &
P="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q"
PYTHONPATH=$PWD timeout 170 $P tests/ops/test_ssd_forward.py \
  -k "early-a-chunk or packed_public_path or sweep_states_packed or public_path_and_nan" > "$OUT/tests-fwd.txt" 2>&1
echo "== forward rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-fwd.txt" | tail -8 | cut -c1-400
wait
echo "== fuzz"; grep "cases (" "$OUT/fuzz-ssd-6201.txt" | cut -c1-300; grep "^FAIL" "$OUT/fuzz-ssd-6201.txt" | cut -c1-700
grep -c "'torch.float16'" "$OUT/fuzz-ssd-6201.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
timeout 280 python3 -m flashssm bench -w 2.7b-8x4K-fp16 -w 2.7b-1x32K-fp16 -w train-2.7b-8x4K-fp16 -i flashssm \
  -i mamba_ssm -i fla > "$OUT/bench-fp16.txt" 2>&1
echo "== bench rc $?"; grep -v -i warn "$OUT/bench-fp16.txt" | tail -30 | cut -c1-200
