#!/usr/bin/env bash
# Thirty-second session, call 7 (H100): the SSD forward test file on the GPU with the cached pick_config (-rA lines
# counted: the -q -q of the project's addopts leaves no summary count).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 560 python3 -m pytest -p no:cacheprovider -o addopts="" -q tests/ops/test_ssd_forward.py 2>&1 | tail -6 \
  | tee "$OUT/call7-tests-fwd.txt"
