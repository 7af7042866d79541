#!/usr/bin/env bash
# Thirty-second session, call 8 (H100): the SSD forward file's Gluon tests (the part calls 5 and 7 did not reach
# within a call's limit), with the cached pick_config.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 540 python3 -m pytest -p no:cacheprovider -o addopts="" -q tests/ops/test_ssd_forward.py -k "gluon" 2>&1 \
  | tail -4 | tee "$OUT/call8-tests-gluon.txt"
