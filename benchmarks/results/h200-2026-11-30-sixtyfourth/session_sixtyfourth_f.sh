#!/usr/bin/env bash
# Sixty-fourth session, call 6 (about 150 s): D's gradient (one value a head, no z) from the tiles kernel's dy . x a
# token, summed by the decay gradient's launch (TILES_DD), against the chain launch's share (which reads x and steps
# 64 tokens instead of 128: 0.494 against 0.390 ms at 8x4K). Offline (sm_90, triton 3.6) the tiles kernel 1672 -> 1888
# instructions, 12 -> 76 B spilled. In one process, alternating, with D, dt_bias and softplus; the gradients' largest
# differences between the two are printed (dD's is the check at real shapes). Then the head-blocks test on the GPU.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_tiles.TILES_DD --value False --value True \
  --options --rounds 3 --workload 8x4K --workload 1x32K --kernel _tiles_kernel --kernel _dstates_kernel \
  --kernel _tiles_da_kernel > "$OUT/ab-tiles-dd.txt" 2>&1
echo "== ab rc $?"; grep -v -i warn "$OUT/ab-tiles-dd.txt" | tail -24 | cut -c1-170
timeout 90 python3 -m pytest -o addopts=-ra -p no:cacheprovider -q tests/ops/test_ssd_backward.py -k da_head \
  > "$OUT/tests.txt" 2>&1
echo "== tests rc $?"; tail -1 "$OUT/tests.txt"
