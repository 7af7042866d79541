#!/usr/bin/env bash
# Sixty-seventh session, call 7 (< 300 s): the final norm's add inside it too (lm.Backbone through block.add_norm):
# the model tests on the GPU; then the 5120-wide gated backward in one split tile with its rows pipelined (4096 + 1024
# columns, 16 warps, 2-3 stages) against the two sweeps (call 5 had the split tile at one stage: 1254 us).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/models/test_models.py \
  -k "not selective" > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; tail -2 "$OUT/tests.txt")
timeout 100 python3 benchmarks/time_norm_tiles.py --rounds 3 --cases "gated bwd" --variant WIDE_GROUP=4096 \
  --variant WIDE_GROUP=8192,SPLIT_TILE=True,TILE_STAGES=3 --variant WIDE_GROUP=8192,SPLIT_TILE=True,TILE_STAGES=2 \
  > "$OUT/norm-gated.txt" 2>&1
echo "== norm gated rc $?"; grep -v -i warn "$OUT/norm-gated.txt" | tail -7
