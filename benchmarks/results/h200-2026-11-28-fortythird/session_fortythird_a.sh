#!/usr/bin/env bash
# Forty-third session, call 1: what the forty-second session could not finish on the GPU (its next_session_a.sh),
# with the failures' names printed as they happen (-v, streamed) so that a time limit cannot cut them off.
# 1. The selective-scan test file, the custom ops' layout tests and the compiled mixers' training test.
# 2. The dstate 128 packings' backward in rows with segments against the packed row.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$OUT/a"
timeout ${TESTS_S:-400} python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=line -n 14 \
  tests/ops/test_selective_scan.py tests/ops/test_custom_op_layouts.py \
  "tests/models/test_models.py::test_mixer_compiles_without_graph_breaks" > "$OUT/a/tests-full.txt" 2>&1
echo "pytest rc $?"
grep -E "FAILED|ERROR|^E |passed|failed| Error" "$OUT/a/tests-full.txt" | grep -v "PASSED" | tail -60 | tee "$OUT/a/tests.txt"
grep -c PASSED "$OUT/a/tests-full.txt"
timeout ${AB_S:-150} python3 benchmarks/ab_packed_scan_bwd.py --scan 8x1024 --scan 1x4096 --dstate 128 --rounds 3 \
  --forms "batch-1 row,rows segments" 2>&1 | grep -v -i warn | tee "$OUT/a/ab-n128.txt"
