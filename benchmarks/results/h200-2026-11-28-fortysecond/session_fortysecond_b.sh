#!/usr/bin/env bash
# Forty-second session, call 2: the GPU tests of this session's changes (the custom ops' fakes against the real ops,
# the compiled mixers' training step under Inductor, the rows' alignment hints: the whole selective-scan file), and
# whether the packed backward's rows should also run where its configuration has segments at dstate 128
# (ROWS_BWD_SEGMENTS; call 1 measured dstate 16's one long sequence: rows 0.95x the packed row).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$OUT/call2"
run() { local name=$1; shift; timeout "$@" 2>&1 | grep -v -i warn | tee "$OUT/call2/$name.txt"; }
run ab-n128 150 python3 benchmarks/ab_packed_scan_bwd.py --scan 8x1024 --scan 1x4096 --dstate 128 --rounds 3 \
  --forms "batch-1 row,rows segments"
run ab-n16-ragged 100 python3 benchmarks/ab_packed_scan_bwd.py --scan 1x32768 --rounds 3 --forms "batch-1 row,rows segments"
timeout 330 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -n 8 tests/ops/test_custom_op_layouts.py \
  tests/ops/test_selective_scan.py "tests/models/test_models.py::test_mixer_compiles_without_graph_breaks" 2>&1 \
  | tail -25 | tee "$OUT/call2/tests.txt"
