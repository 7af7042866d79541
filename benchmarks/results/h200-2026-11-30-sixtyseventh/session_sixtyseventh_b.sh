#!/usr/bin/env bash
# Sixty-seventh session, call 2 (< 400 s): the one-tile backward's group as two power-of-two tiles (SPLIT_TILE;
# 2560 = 2048 + 512, 5120 = 4096 + 1024: fewer registers, offline) on the GPU: the norm tests, then every layout
# variant at the 2.7B step's norm shapes (time_norm_tiles.py).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_norm.py \
  tests/models/test_models.py -k "norm or add or autocast" > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; \
  tail -3 "$OUT/tests.txt")
SECONDS=0
timeout 240 python3 benchmarks/time_norm_tiles.py --rounds 3 > "$OUT/norm-tiles.txt" 2>&1
echo "== norm tiles rc $? (${SECONDS} s)"; grep -v -i warn "$OUT/norm-tiles.txt" | tail -16
