#!/usr/bin/env bash
# Forty-first session, call 4: the GPU's tests on the final code (the packed backward's inner chunks and the packed
# forward's window form): the selective scan's files, the models (packed prefill and generation), and the
# differential fuzzer on selective_scan (bf16 included on the GPU: random shapes, options and varlen packs).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$OUT/call4"
timeout 330 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_selective_scan.py \
  tests/ops/test_selective_scan_reference.py tests/models/test_models.py > "$OUT/call4/tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  " "$OUT/call4/tests.txt" | head -30
timeout 120 python3 -m tests.fuzz.fuzz --seed 41 --budget 90 --ops selective_scan --device cuda \
  > "$OUT/call4/fuzz.txt" 2>&1
grep -v -i warn "$OUT/call4/fuzz.txt" | tail -8
