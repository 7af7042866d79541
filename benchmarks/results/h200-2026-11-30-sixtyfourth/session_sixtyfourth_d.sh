#!/usr/bin/env bash
# Sixty-fourth session, call 4 (about 200 s): the decay gradient's launch took 22.9 -> 33.3 us at 8x4K with dt_bias and
# softplus once it also took ddt on to the raw dt (call 2). Its heads a program and warps, in one process, alternating
# (ab_train_flag.py, the launch's GPU time by the profiler), with and without the options.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
A="python3 benchmarks/ab_train_flag.py"
timeout 100 $A flashssm.ops.ssd.backward_tiles.DA_HEADS --value 16 --value 8 --value 4 --options --rounds 3 \
  --kernel _tiles_da_kernel --workload 8x4K --workload 1x32K > "$OUT/ab-heads-options.txt" 2>&1
echo "== heads options rc $?"; grep -v -i warn "$OUT/ab-heads-options.txt" | tail -14 | cut -c1-160
timeout 100 $A flashssm.ops.ssd.backward_tiles.DA_WARPS --value 4 --value 8 --value 2 --options --rounds 3 \
  --kernel _tiles_da_kernel --workload 8x4K --workload 1x32K > "$OUT/ab-warps-options.txt" 2>&1
echo "== warps options rc $?"; grep -v -i warn "$OUT/ab-warps-options.txt" | tail -14 | cut -c1-160
timeout 60 $A flashssm.ops.ssd.backward_tiles.DA_HEADS --value 16 --value 4 --rounds 3 \
  --kernel _tiles_da_kernel --workload 8x4K > "$OUT/ab-heads-plain.txt" 2>&1
echo "== heads plain rc $?"; grep -v -i warn "$OUT/ab-heads-plain.txt" | tail -8 | cut -c1-160
