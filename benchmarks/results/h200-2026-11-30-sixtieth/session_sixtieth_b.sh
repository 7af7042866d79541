#!/usr/bin/env bash
# Sixtieth session, call 2 (about 300 s): call 1's decay80 log found case 4140675832 (bf16, 65 tokens, 3 heads of
# 64 x 64, chunk 64, initial states, fp16 states) with dA 11 % off on the GPU (108 units of the terms bound; the loose
# decay80 allowance passed it); at fp16 on the CPU its dA is 0.2 % off. Which form and which products: the case as
# drawn under each backward form and product mode, and at fp16 / fp32 inputs (`--dtype`); two milder bf16 cases
# (3800466732: 2.2 units, 1241417136: 1.6) the same way.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
RP="python3 -m benchmarks.replay_fuzz_case --op ssd_scan"
SETS=(--set backward_chain.TILES_MIN_WAVES=0 --set backward.DEFAULT_FORM=\'parallel\'
      --set backward_chain.DEFAULT_MODE=2 --set backward_chain.DEFAULT_SPLIT_MASK=511
      --set backward_chain.STATES_FROM_FORWARD=False,backward_chain.TILES_STATES_FROM_FORWARD=False
      --set forward_gluon.ENABLED=False)
PYTHONPATH=$PWD timeout 420 $RP --case 4140675832 "${SETS[@]}" > "$OUT/replay-4140675832.txt" 2>&1 &
( PYTHONPATH=$PWD timeout 200 $RP --case 4140675832 --dtype float16 --set backward_chain.TILES_MIN_WAVES=0
  PYTHONPATH=$PWD timeout 200 $RP --case 4140675832 --dtype float32 --set backward_chain.TILES_MIN_WAVES=0
) > "$OUT/replay-4140675832-dtypes.txt" 2>&1 &
PYTHONPATH=$PWD timeout 420 $RP --case 3800466732 "${SETS[@]}" > "$OUT/replay-3800466732.txt" 2>&1 &
PYTHONPATH=$PWD timeout 420 $RP --case 1241417136 "${SETS[@]}" > "$OUT/replay-1241417136.txt" 2>&1 &
wait
for f in "$OUT"/replay-*.txt; do
  echo "== $f"; grep -v -i warn "$f" | grep "^==\| dA \|Error\|failures" | cut -c1-230
done
