#!/usr/bin/env bash
# Thirty-third session, call 3: the SSD forward file's Gluon tests on the GPU with the run-time span (every Gluon case,
# late and early, every option and state dtype; the public paths; the new run-time span cases).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/call3-gpu.txt"
timeout 560 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/ops/test_ssd_forward.py -k gluon 2>&1 \
  | tail -6 | tee "$OUT/call3-tests-gluon.txt"
