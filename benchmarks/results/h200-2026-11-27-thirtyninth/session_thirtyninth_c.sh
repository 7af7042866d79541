#!/usr/bin/env bash
# Thirty-ninth session, call 3: after call 2, packed sequences take the 128-token tiles only where that adds no chunk
# rows (PACKED_ROWS_OVER: memory), else the forward's 256 with the chain in spans. (1) every GPU test of
# test_ssd_forward.py (the Triton forward's new state_rows argument is in every launch) and the backward's packed,
# varlen, chain, stored-states and determinism tests; (2) packed against dense with mamba_ssm beside (carry .whl).
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 100 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "packed or varlen or chain or sweep_states or entering_states or smaller_chunks or in_place or repeats" \
  > "$OUT/call3-tests-backward.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed" "$OUT/call3-tests-backward.txt" | head -20
timeout 190 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  > "$OUT/call3-tests-forward.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed" "$OUT/call3-tests-forward.txt" | head -20
timeout 200 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --ssd 64x512 --scan none --rounds 5 \
  > "$OUT/call3-packed.txt" 2>&1
grep -v -i warn "$OUT/call3-packed.txt" | grep -v "^set\|mamba_ssm:"
