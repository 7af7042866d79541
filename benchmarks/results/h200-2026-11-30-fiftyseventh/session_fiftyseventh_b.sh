#!/usr/bin/env bash
# Fifty-seventh session, call 2 (about 550 s). (1) Where fp16 training's time goes against bf16's: call 1 measured fp16
# training at 8 x 4K 4.64 ms (3.77 before ca7fc30) against bf16's 2.63: every kernel of the call, bf16, fp16 and fp16
# in the tree before ca7fc30 (_old_fp16/). (2) PEEL_EDGE_TILES_FWD again, with the mix, 7 rounds: call 1 had the
# 64 x 256 forward -5.2 % and 8 x 2K +2.2 %, the forward with states -2.4 / -1.5 %. (3) The instruction-fetch survey
# (profile_fetch.sh) of the SSD and Mamba-1 training calls.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/k" "$OUT/a"
export PYTHONUNBUFFERED=1
for v in "bf16 $PWD" "fp16 $PWD" "fp16 $PWD/_old_fp16:$PWD"; do
  set -- $v
  PYTHONPATH=$2 timeout 60 python3 benchmarks/train_kernel_times.py --workload 8x4K --workload 1x32K --dtype $1 \
    >> "$OUT/k/kernels.txt" 2>&1
  echo "kernels $1 $2 rc $?" | tee -a "$OUT/k/kernels.txt"
done
cut -c1-160 "$OUT/k/kernels.txt"
export PYTHONPATH=$PWD
timeout 200 python3 benchmarks/ab_scan_flag.py --flag PEEL_EDGE_TILES_FWD --rounds 7 m1train-2.8b-packed-64x256 \
  m1train-2.8b-packed-8x2K m1train-2.8b-packed-mix > "$OUT/k/ab-peel.txt" 2>&1
echo "ab peel rc $?"; grep -v "^\s*$" "$OUT/k/ab-peel.txt" | tail -18 | cut -c1-300
timeout 170 bash benchmarks/profile_fetch.sh "$OUT/a" ssd-train:8x4K scan-train:m1train-2.8b-8x2K \
  > "$OUT/a/survey.txt" 2>&1
echo "survey rc $?"; cut -c1-200 "$OUT/a/survey.txt"
(cd "$OUT/a" && tar czf raw.tgz *.csv *.log 2>/dev/null; rm -f *.csv *.log)
ls "$OUT/a"
