#!/usr/bin/env bash
# Thirty-ninth session, call 5 (carry .whl): call 4's two failures were the new test's aligned packing with too few
# chains for the span form (5 sequences x 80 heads < 2 x 264 resident programs): 7 sequences now. That test, then the
# packed bench workloads against mamba_ssm (seq_idx) and fla (cu_seqlens) with the session's final code.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 80 python3 -m pytest -q -o addopts="-ra" -n 4 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "packed_states_from_forward" > "$OUT/call5-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  " "$OUT/call5-tests.txt" | head -20
timeout 200 python3 -m flashssm bench -w 2.7b-packed-8x4K -w train-2.7b-packed-8x4K -w train-2.7b-packed-64x512 \
  -i flashssm -i mamba_ssm -i fla -i flashssm-deterministic --json "$OUT/call5-bench-packed.json" \
  > "$OUT/call5-bench-packed.txt" 2>&1
grep -v -i warn "$OUT/call5-bench-packed.txt" | tail -30
