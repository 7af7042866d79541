#!/usr/bin/env bash
# Sixty-eighth session, call 5: the fuzzer's new strided layout (a block of columns of rows padded by 3, 8, 16 or 24
# elements, as a model's split gives) on the GPU at model shapes, where the Gluon forward admits or refuses it (call 3
# found rows of 8 mod 16 elements crashing its compile; the blocker now asks multiples of 16); then every op at small
# shapes.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m tests.fuzz.fuzz --shapes model --seed 6803 --budget 150 --ops ssd_scan > "$OUT/fuzz-model.txt" 2>&1
echo "== fuzz model rc $?"; grep -v -i warn "$OUT/fuzz-model.txt" | tail -4
timeout 150 python3 -m tests.fuzz.fuzz --seed 6804 --budget 100 > "$OUT/fuzz-small.txt" 2>&1
echo "== fuzz small rc $?"; grep -v -i warn "$OUT/fuzz-small.txt" | tail -4
