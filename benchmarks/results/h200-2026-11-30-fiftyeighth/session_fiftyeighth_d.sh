#!/usr/bin/env bash
# Fifty-eighth session, call 4 (about 300 s): the chain launch's late form with its decay-gradient carry after the
# sub-chunk's product (CARRY_AFTER_PRODUCT), against before it. Call 3's profile put 15 % of _dstates_kernel's stall
# samples on the first unpack of H (16 KB a sub-chunk into registers, loaded at the sub-chunk's top and used at
# once). Prediction: most of that 15 % hidden behind the product: the chain launch -8 to -12 % at 8x4K (0.39 ms), the
# training call -1.5 %; 1x32K (early halves: unchanged code) within noise.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
sw=flashssm.ops.ssd.backward_chain.CARRY_AFTER_PRODUCT
timeout 150 python3 benchmarks/ab_train_flag.py $sw --value False --value True --workload 8x4K --workload 1x32K \
  --rounds 7 > "$OUT/ab-carry.txt" 2>&1
echo "== ab rc $?"; grep -E "medians|call [0-9]|_dstates|sum of" "$OUT/ab-carry.txt"
timeout 100 python3 benchmarks/ab_train_flag.py $sw --value False --value True --workload 8x4K --options \
  --rounds 5 > "$OUT/ab-carry-options.txt" 2>&1
echo "== ab options rc $?"; grep -E "medians|call [0-9]|_dstates|sum of" "$OUT/ab-carry-options.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/ops/test_ssd_backward.py --full \
  -k "chain_carry or chain_span or late or dstates" > "$OUT/tests.txt" 2>&1
echo "== tests rc $?"; tail -4 "$OUT/tests.txt"
timeout 90 bash benchmarks/profile_ssd_backward.sh train-2.7b-8x4K "$OUT/ncu" _dstates_kernel > "$OUT/ncu.txt" 2>&1
echo "== ncu rc $?"; grep -E "Duration|DRAM Throughput|Registers Per" "$OUT/ncu/sections-train-2.7b-8x4K-_dstates_kernel.txt"
head -12 "$OUT/ncu/stalls-train-2.7b-8x4K-_dstates_kernel.txt" | cut -c1-180
cd "$OUT" && tar czf ncu.tgz ncu && rm -rf ncu
