#!/usr/bin/env bash
# Thirty-seventh session, call 2 (H100): the tiles kernel's latency (thirty-sixth session: ~30 % of its stall samples
# wait on loads just issued, four 4-warp programs an SM at the 128-register cap) against its occupancy and block size,
# on today's code: lower register caps (five or six programs an SM, more spills), two warps a program (mma v2, eight
# programs an SM), 128-token blocks (one pair a chunk of 128, twice the work a program). Training calls, alternating.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
M=flashssm.ops.ssd.backward_tiles
timeout 200 python3 benchmarks/ab_train_flag.py $M.TILES_MAXNREG_NO_PATHS --value 128 --value 96 --value 80 \
  --workload 8x4K --workload 1x32K --kernel _tiles_kernel > "$OUT/call2-ab-cap.txt" 2>&1
timeout 200 python3 benchmarks/ab_train_flag.py $M.TILES_WARPS --value 4 --value 2 \
  --workload 8x4K --workload 1x32K --kernel _tiles_kernel > "$OUT/call2-ab-warps.txt" 2>&1
for t in 32 128; do
  timeout 200 python3 benchmarks/ab_train_flag.py $M.TILE --value 64 --value $t \
    --workload 8x4K --workload 1x32K --kernel _tiles_kernel --kernel _tiles_bc_kernel --kernel _tiles_paths_kernel \
    > "$OUT/call2-ab-tile$t.txt" 2>&1
done
cat "$OUT"/call2-ab-*.txt | grep -v Warn
