#!/usr/bin/env bash
# Sixty-fourth session, call 5 (about 70 s): call 4 found 8 heads a program of the decay gradient's launch 21 % faster
# than 16 at 8x4K with the options (backward chunks of 128); without them only 16 and 4 were timed. 16 against 8 again,
# both ways.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
A="python3 benchmarks/ab_train_flag.py"
timeout 60 $A flashssm.ops.ssd.backward_tiles.DA_HEADS --value 16 --value 8 --rounds 5 \
  --kernel _tiles_da_kernel --workload 8x4K > "$OUT/ab-heads-plain.txt" 2>&1
echo "== heads plain rc $?"; grep -v -i warn "$OUT/ab-heads-plain.txt" | tail -8 | cut -c1-160
timeout 60 $A flashssm.ops.ssd.backward_tiles.DA_HEADS --value 16 --value 8 --rounds 5 --options \
  --kernel _tiles_da_kernel --workload 8x4K > "$OUT/ab-heads-options.txt" 2>&1
echo "== heads options rc $?"; grep -v -i warn "$OUT/ab-heads-options.txt" | tail -8 | cut -c1-160
