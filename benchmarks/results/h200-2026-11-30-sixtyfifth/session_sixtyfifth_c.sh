#!/usr/bin/env bash
# Sixty-fifth session, call 3 (about 300 s): the chain launch's warps at its wide step. Offline (sm_90, triton 3.6,
# 8x4K's late form, steps of 128): 4 warps 255 registers and 64 B spilled (with a per-head D's row sums 132 B), 8
# warps 189 registers (246 with D) and none; 8 warps leave one program an SM where 4 leave two (the same warps). In
# one process, alternating, without and with D, dt_bias and softplus.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
A="python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.DSTATES_WARPS --value 4 --value 8 --rounds 3"
timeout 140 $A --kernel _dstates_kernel --workload 8x4K --workload 1x32K > "$OUT/ab-warps-plain.txt" 2>&1
echo "== plain rc $?"; grep -v -i warn "$OUT/ab-warps-plain.txt" | tail -12 | cut -c1-200
timeout 140 $A --options --kernel _dstates_kernel --workload 8x4K --workload 1x32K > "$OUT/ab-warps-options.txt" 2>&1
echo "== options rc $?"; grep -v -i warn "$OUT/ab-warps-options.txt" | tail -12 | cut -c1-200
