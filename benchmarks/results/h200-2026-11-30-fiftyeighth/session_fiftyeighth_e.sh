#!/usr/bin/env bash
# Fifty-eighth session, call 5 (about 300 s): the chain launch's late form asking for the next chunk's H into L2 at
# each sub-chunk (CHAIN_PREFETCH_STATES), against none. Call 3's profile put 15 % of _dstates_kernel's stall samples on
# the first unpack of H (16 KB a sub-chunk loaded into registers ~70 instructions before its use; call 4 showed that
# moving the carry after the product in the source left the SASS as it was). Prediction: the load then waits for L2,
# not DRAM: half of that 15 %, the chain launch -5 to -8 % at 8x4K (0.39 ms), the training call -1 %; 1x32K (early
# halves: no prefetch compiled) within noise.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
sw=flashssm.ops.ssd.backward_chain.CHAIN_PREFETCH_STATES
timeout 150 python3 benchmarks/ab_train_flag.py $sw --value False --value True --workload 8x4K --workload 1x32K \
  --rounds 7 > "$OUT/ab-prefetch.txt" 2>&1
echo "== ab rc $?"; grep -E "medians|call [0-9]|_dstates|sum of" "$OUT/ab-prefetch.txt"
timeout 100 python3 benchmarks/ab_train_flag.py $sw --value False --value True --workload 8x4K --options \
  --rounds 5 > "$OUT/ab-prefetch-options.txt" 2>&1
echo "== ab options rc $?"; grep -E "medians|call [0-9]|_dstates|sum of" "$OUT/ab-prefetch-options.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/ops/test_ssd_backward.py --full \
  -k "chain_carry or chain_span or late or dstates" > "$OUT/tests.txt" 2>&1
echo "== tests rc $?"; tail -4 "$OUT/tests.txt"
timeout 90 bash benchmarks/profile_ssd_backward.sh train-2.7b-8x4K "$OUT/ncu" _dstates_kernel > "$OUT/ncu.txt" 2>&1
echo "== ncu rc $?"; grep -E "Duration|DRAM Throughput|Registers Per" "$OUT/ncu/sections-train-2.7b-8x4K-_dstates_kernel.txt"
head -12 "$OUT/ncu/stalls-train-2.7b-8x4K-_dstates_kernel.txt" | cut -c1-180
cd "$OUT" && tar czf ncu.tgz ncu && rm -rf ncu
