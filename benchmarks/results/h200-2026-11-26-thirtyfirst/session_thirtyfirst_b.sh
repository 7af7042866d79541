#!/usr/bin/env bash
# Thirty-first session, call 2: dt and its cumsums through the stages by cp.async (and the next sub-chunk's last
# cumsum a step ahead) in the Gluon forward, on top of the 16-bit move of y. GPU tests of the Gluon kernel, the A/B
# against the kernel before the session (ab_tmp/fg_e30b1e3.py) and with the 16-bit move alone (ab_tmp/fg_epilogue.py),
# then the warp-stall sampling of 1x128K and 8x4K again.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m gpu tests/ops/test_ssd_forward.py -k gluon \
  > "$OUT/call2-tests-gluon.txt" 2>&1
tail -3 "$OUT/call2-tests-gluon.txt"
timeout 240 python3 benchmarks/ab_gluon_forward.py --before ab_tmp/fg_e30b1e3.py --before ab_tmp/fg_epilogue.py \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-1x128K --workload 2.7b-1x32K --workload 2.7b-1x8K 2>&1 \
  | grep -v Warn | tee "$OUT/call2-ab.txt"
for w in 2.7b-1x128K 2.7b-8x4K; do
  timeout 200 bash benchmarks/profile_ssd_forward.sh $w "$OUT/ncu" source > /dev/null 2>&1
  python3 benchmarks/stall_summary.py "$OUT/ncu/src-$w.csv" --top 12 > "$OUT/call2-stalls-$w.txt" 2>&1
  head -24 "$OUT/call2-stalls-$w.txt"
  gzip -f "$OUT/ncu/src-$w.csv"
done
grep -h -E "Registers|Achieved Occupancy|Theoretical Occupancy" "$OUT"/ncu/*.log | head
rm -f "$OUT"/ncu/*.ncu-rep
