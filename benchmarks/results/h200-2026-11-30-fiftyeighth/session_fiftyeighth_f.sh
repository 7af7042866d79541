#!/usr/bin/env bash
# Fifty-eighth session, call 6 (about 350 s): D's gradient from the tiles kernel (backward_tiles.TILES_DD), which holds
# each block's x and dy tiles, instead of the chain launch, which read x for it alone (a third of its bytes: 0.39 ->
# 0.50 ms at 8x4K with D, dt_bias, softplus, call 5) and took the narrow sub-chunk for it. Offline (sm_90, triton 3.6,
# the 8x4K config): the tiles kernel 1768 -> 2032 instructions, spills 8 -> 60 B (the column sums across warps).
# Prediction, with D, dt_bias, softplus: the chain launch -0.1 ms (back to its 0.39 without D), the tiles kernel +0 to
# +0.05 ms: the training call -2 to -3.5 % at 8x4K and 1x32K; without D unchanged (control); with z the chain keeps
# its narrow sub-chunk (z's) and saves x's read only.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
sw=flashssm.ops.ssd.backward_tiles.TILES_DD
timeout 160 python3 benchmarks/ab_train_flag.py $sw --value False --value True --workload 8x4K --workload 1x32K \
  --options --rounds 7 --peak > "$OUT/ab-dd-options.txt" 2>&1
echo "== ab options rc $?"; grep -E "medians|call [0-9]|_dstates|_tiles_kernel|sum of" "$OUT/ab-dd-options.txt"
timeout 110 python3 benchmarks/ab_train_flag.py $sw --value False --value True --workload 8x4K --workload 1x32K \
  --options --z --rounds 5 > "$OUT/ab-dd-z.txt" 2>&1
echo "== ab z rc $?"; grep -E "medians|call [0-9]|_dstates|_tiles_kernel|sum of" "$OUT/ab-dd-z.txt"
timeout 60 python3 benchmarks/ab_train_flag.py $sw --value False --value True --workload 8x4K --rounds 5 \
  > "$OUT/ab-dd-plain.txt" 2>&1
echo "== ab plain rc $?"; grep -E "medians|call [0-9]|sum of" "$OUT/ab-dd-plain.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/ops/test_ssd_backward.py --full \
  -k "tiles_dd or chain_carry or every_option or deterministic" > "$OUT/tests.txt" 2>&1
echo "== tests rc $?"; tail -4 "$OUT/tests.txt"
