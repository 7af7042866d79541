#!/usr/bin/env bash
# Twentieth session, first GPU call: where the Mamba-1 backward's time goes at the three training workloads
# (per-kernel times of a training call, the backward's stall sampling), what dB/dC cost at dstate 128 (no-dbc.diff),
# and a register cap with segments around the picked configurations at dim 1536 1x8K and dstate 128 1x1K.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
D=benchmarks/results/h100-2026-11-25-twentieth
s=1x8192x1536
timeout 200 python3 benchmarks/tune_scan_segments.py --backward $s:4,0 $s:4,832,168 $s:4,1024,168 $s:4,1280,168 \
  $s:4,640 $s:4,640,168 $s:4,1664,168 2>&1 | grep -v Warn | tee "$OUT/call1-tune-130m.txt"
s=1x1024x5120
timeout 200 python3 benchmarks/tune_scan_segments.py --dstate 128 --backward $s:16,512 $s:16,512,168 $s:16,256 \
  $s:16,256,168 $s:16,0,168 $s:16,0,128 $s:8,0,168 2>&1 | grep -v Warn | tee "$OUT/call1-tune-n128.txt"
# the dB/dC experiment in a patched copy (compiled in parallel, then timed one process at a time)
rm -rf /tmp/exp && mkdir /tmp/exp && git ls-files -z | xargs -0 cp --parents -t /tmp/exp \
  && cp -r $D /tmp/exp/$D && (cd /tmp/exp && patch -p1 -s < $D/no-dbc.diff)
for e in 0 2 3; do
  (cd /tmp/exp && FLASHSSM_SCAN_EXPERIMENT=$e PYTHONPATH=/tmp/exp timeout 150 python3 $D/time_bwd_experiment.py \
     m1train-n128-1x1K m1train-2.8b-8x2K > /dev/null 2>&1) &
done
wait
for e in 0 2 3; do
  (cd /tmp/exp && FLASHSSM_SCAN_EXPERIMENT=$e PYTHONPATH=/tmp/exp timeout 60 python3 $D/time_bwd_experiment.py \
     m1train-n128-1x1K m1train-2.8b-8x2K 2>&1 | grep -v Warn | tee -a "$OUT/call1-no-dbc.txt")
done
timeout 150 python3 benchmarks/probe_scan_train.py 2>&1 | grep -v Warn | tee "$OUT/call1-probe-train.txt"
for w in m1train-2.8b-8x2K m1train-n128-1x1K; do
  timeout 120 bash benchmarks/profile_scan_backward.sh $w "$OUT/ncu" 2>&1 | tee "$OUT/call1-ncu-$w.txt"
  python3 benchmarks/stall_summary.py "$OUT/ncu/src-$w.csv.gz" --top 30 --context 3 > "$OUT/call1-stalls-$w.txt" 2>&1
  head -3 "$OUT/call1-stalls-$w.txt"
done
