#!/usr/bin/env bash
# Thirty-fifth session, call 6 (H100): the paths launch's knobs again now that it reads no dH for the carry (its
# stages were chosen with the carry's plain load in the loop): stages 3 / 4, heads a program 20 / 40 / 10, at 8x4K and
# 1x32K with D, dt_bias and softplus; then its Nsight Compute profile at 8x4K as it is now.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 120 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_tiles.PATHS_STAGES --value 3 --value 4 \
  --rounds 3 --workload 8x4K --workload 1x32K --options --kernel _tiles_paths_kernel 2>&1 | grep -v Warn \
  | tee "$OUT/call6-ab-stages.txt"
timeout 150 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_tiles.PATHS_HEADS --value 20 --value 40 \
  --value 10 --rounds 3 --workload 8x4K --workload 1x32K --options --kernel _tiles_paths_kernel 2>&1 | grep -v Warn \
  | tee "$OUT/call6-ab-heads.txt"
timeout 150 bash benchmarks/profile_ssd_backward.sh train-2.7b-8x4K "$OUT" _tiles_paths_kernel > /dev/null 2>&1
rm -f "$OUT"/src-*.log
grep -E "Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy" "$OUT"/sections-*.txt
head -40 "$OUT"/stalls-*.txt
