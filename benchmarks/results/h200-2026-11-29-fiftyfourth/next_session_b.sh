#!/usr/bin/env bash
# Ready for the next session (about 470 s): (1) SHARED_CHUNKS_DENSE, written after the fifty-fourth session's device
# time was spent (off by default): where rows are shared, the backward's chunks inside one sequence by the dense code.
# The new packed workload m1train-2.8b-packed-mix (4 sequences of ~3K and 64 of ~64 tokens: rows shared, 440 of its
# 492 inner chunks clean) off against on; the 64 x 256 packing (no shared rows: the switch must not matter) as the
# control. Offline (sm_90, triton 3.9) the shared-rows backward goes 5448 -> 5144 instructions, spills 16 B both.
# Turn it on if the mix gains and the control holds. SHARED_TILES_DENSE, the forward's tiles the same way (offline
# 2784 -> 2800 instructions, FSEL 324 -> 260, registers 140 -> 146): its forward columns on the mix.
# (2) EDGE_TILES_BWD again at 8 x 2K packed (+0.9 % in call 2,
# where 1 % fewer tokens walked predicted -1 %), with more rounds.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -n 14 tests/ops/test_selective_scan.py \
  -k "clean_chunks or nan_stays or packed_rows" > "$OUT/b/tests.txt" 2>&1
echo "pytest rc $?"; tail -2 "$OUT/b/tests.txt"
timeout 130 python3 benchmarks/ab_scan_flag.py --flag SHARED_CHUNKS_DENSE --rounds 5 m1train-2.8b-packed-mix \
  m1train-2.8b-packed-64x256 > "$OUT/b/ab-clean.txt" 2>&1
echo "ab clean rc $?"; tail -12 "$OUT/b/ab-clean.txt"
timeout 100 python3 benchmarks/ab_scan_flag.py --flag SHARED_TILES_DENSE --rounds 5 m1train-2.8b-packed-mix \
  > "$OUT/b/ab-clean-fwd.txt" 2>&1
echo "ab clean fwd rc $?"; tail -6 "$OUT/b/ab-clean-fwd.txt"
timeout 80 python3 benchmarks/ab_scan_flag.py --flag EDGE_TILES_BWD --rounds 9 m1train-2.8b-packed-8x2K \
  > "$OUT/b/ab-edge.txt" 2>&1
echo "ab edge rc $?"; tail -6 "$OUT/b/ab-edge.txt"
