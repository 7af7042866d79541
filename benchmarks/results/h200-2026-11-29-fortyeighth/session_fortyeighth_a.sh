#!/usr/bin/env bash
# Ready for the next session: the selective-scan backward's DBC_PICK switch (forty-seventh session, off by default,
# untimed). dB and dC leave the channel sums from the thread whose channel index is the token's in the tile (a chain of
# selects in the thread) instead of moving the butterfly's replicated [lanes, tile] sums to one value a thread through
# shared memory: offline (sm_90, triton 3.9) the 8x2K backward keeps 2184 instructions against 2168 and loses 8 of its
# 25 barriers, 16 of its 19 STS and 8 of its 11 LDSM, no spills. Prediction: -5 to -10 % of the backward where those
# barriers hold the next slot's work back, 0 if not.
# One call: the switch's CPU test on the GPU (bf16 is not in it: the A/B's gradient differences cover real shapes),
# then the A/B (backward alone, alternating) at 8x2K (no segments) and 2x16K (segments of 1024). A second call, if it
# wins: the 130M width and a packing (`-w m1train-130m-1x8K -w m1train-2.8b-packed-8x2K`), then the default flipped
# and the whole selective-scan GPU file.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 3 \
  tests/ops/test_selective_scan.py -k test_dbc_pick > "$OUT/a/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests.txt" | tail -6
timeout 400 python3 benchmarks/ab_scan_flag.py --flag DBC_PICK --rounds 5 m1train-2.8b-8x2K m1train-2.8b-2x16K \
  2>&1 | grep -v -i warn | tee "$OUT/a/ab-dbc-pick.txt"
