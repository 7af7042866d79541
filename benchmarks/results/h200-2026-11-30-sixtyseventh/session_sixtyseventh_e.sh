#!/usr/bin/env bash
# Sixty-seventh session, call 5 (< 300 s): the backward kernels' loads pipelined by Triton (cp.async into shared
# memory; offline the two-sweep kernel 40 -> 48 / 64 registers at 2 / 3 stages, the one-tile 106 -> 128 (add) and
# 124 -> 145 (block, mixed)): the pipelined tests on the GPU, then the stages at the step's shapes.
# Prediction: the two-sweep gated backward (884 us a launch in the step, 2.0 TB/s counted) gains most: its column
# loops wait on each chunk's loads; -10 to -20 %. The one-tile kernels less (two programs a SM already overlap).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 100 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_norm.py \
  -k "pipelined or tile_switches or add_rmsnorm" > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; tail -2 "$OUT/tests.txt")
SECONDS=0
timeout 180 python3 benchmarks/time_norm_tiles.py --rounds 3 --cases bwd \
  --variant TILE_STAGES=1,WIDE_STAGES=1 --variant TILE_STAGES=2,WIDE_STAGES=2 --variant TILE_STAGES=3,WIDE_STAGES=3 \
  --variant WIDE_STAGES=2,SPLITS_PER_SM=6 --variant WIDE_STAGES=3,SPLITS_PER_SM=2 --variant TILE_STAGES=2,SPLIT_TILE=True \
  > "$OUT/norm-stages.txt" 2>&1
echo "== norm stages rc $? (${SECONDS} s)"; grep -v -i warn "$OUT/norm-stages.txt" | tail -16
