#!/usr/bin/env bash
# Fifty-ninth session, call 2: the two model-shape fuzz failures of call 1 replayed in detail (`replay_fuzz_case.py`:
# every output's error, the full traceback), under the switches that pick the GPU-only paths (the Gluon forward, the
# forward's stored states for the tiles backward); beside them, more model-shape fuzz with fresh seeds.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
F="python3 -m tests.fuzz.fuzz --shapes model --verbose"
PYTHONPATH=$PWD timeout 300 $F --ops ssd_scan --seed 5911 --budget 240 > "$OUT/fuzz-ssd-5911.txt" 2>&1 &
PYTHONPATH=$PWD timeout 300 $F --ops selective_scan --seed 5912 --budget 240 > "$OUT/fuzz-scan-5912.txt" 2>&1 &
RP="python3 -m benchmarks.replay_fuzz_case --op ssd_scan --shapes model"
PYTHONPATH=$PWD timeout 200 $RP --case 4057396612 --set forward_gluon.ENABLED=False \
  --set backward_chain.TILES_STATES_FROM_FORWARD=False \
  --set forward_gluon.ENABLED=False,backward_chain.TILES_STATES_FROM_FORWARD=False > "$OUT/replay-da.txt" 2>&1
echo "== replay dA rc $?"; grep -v -i warn "$OUT/replay-da.txt" | grep "==\|dA \|dinit\|final\|failures\|Error" | cut -c1-250
PYTHONPATH=$PWD timeout 200 $RP --case 3025600353 > "$OUT/replay-oor.txt" 2>&1
echo "== replay OOR rc $?"; grep -v -i warn "$OUT/replay-oor.txt" | tail -30 | cut -c1-250
wait
for f in "$OUT"/fuzz-*.txt; do
  echo "== $f"; grep -c "^ok" "$f"; grep "^FAIL\|cases (" "$f" | cut -c1-700
done
