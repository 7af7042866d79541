#!/usr/bin/env bash
# Thirty-third session, call 8: GPU tests after dB and dC became the halves of one buffer (one fill, one cast): the SSD
# backward file, then every file but the SSD forward's and backward's (call 7 ran those; its run of the rest stopped
# at 90 % at its limit, with no failure).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 250 python3 -m pytest -n 8 -p no:cacheprovider -o addopts="-ra" tests/ops/test_ssd_backward.py \
  > "$OUT/call8-tests-bwd.txt" 2>&1
tail -3 "$OUT/call8-tests-bwd.txt"
timeout 320 python3 -m pytest -n 8 -p no:cacheprovider -o addopts="-ra" tests --ignore=tests/ops/test_ssd_forward.py \
  --ignore=tests/ops/test_ssd_backward.py > "$OUT/call8-tests-rest.txt" 2>&1
tail -3 "$OUT/call8-tests-rest.txt"
