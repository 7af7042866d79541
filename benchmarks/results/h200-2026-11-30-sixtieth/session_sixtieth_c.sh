#!/usr/bin/env bash
# Sixtieth session, call 3 (about 400 s): the fuzzer's new model-shape profiles for the decoding steps, the
# convolution and the gated norm (`--shapes model`, every op now), one process an op, fresh seeds; ssd_scan and
# selective_scan model shapes beside them.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
F="python3 -m tests.fuzz.fuzz --shapes model --verbose"
i=0
for op in ssd_step selective_scan_step causal_conv1d rmsnorm_gated ssd_scan selective_scan; do
  i=$((i + 1))
  PYTHONPATH=$PWD timeout 380 $F --ops $op --seed 601$i --budget 320 > "$OUT/fuzz-$op-601$i.txt" 2>&1 &
done
wait
for f in "$OUT"/fuzz-*.txt; do
  echo "== $f"; grep -c "^ok" "$f"; grep "^FAIL\|cases (" "$f" | cut -c1-600; grep -i "error\|Traceback" "$f" | head -3
done
