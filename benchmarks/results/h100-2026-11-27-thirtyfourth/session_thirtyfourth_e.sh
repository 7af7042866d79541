#!/usr/bin/env bash
# Thirty-fourth session, call 5 (H100, carry .whl): the deterministic mode takes the forward's states where its tiles
# run in the forward's chunks (1x32K: two buffers instead of the recompute in place). (1) The backward file's tests of
# the stored states and of the deterministic mode on the GPU; (2) the training bench, both modes, with mamba_ssm
# (1x2K too: call 4's run stopped before it).
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 -m flashssm bench --json "$OUT/call5-bench-train.json" -w train-2.7b-1x32K -w train-2.7b-1x2K \
  -w train-2.7b-8x4K -i flashssm -i flashssm-deterministic -i mamba_ssm > "$OUT/call5-bench-train.txt" 2>&1
grep -E "^device|^train|^flashssm|^mamba" "$OUT/call5-bench-train.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "tiles_states or deterministic or in_place or halves or smaller_chunks" > "$OUT/call5-tests.txt" 2>&1
tail -6 "$OUT/call5-tests.txt"
