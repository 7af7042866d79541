#!/usr/bin/env bash
# Twenty-ninth session, call 3: the Gluon sweep with EARLY_CB and DECAYS_AHEAD (the rows' decays and the last cumsum
# loaded an iteration ahead: call 2's stall sampling had 19 % of the samples on the first use of the last cumsum,
# loaded right before it), A/B against the Triton kernel; then stall sampling of the combination at 8x4K.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/results/h100-2026-11-25-twentyninth/gluon_ssd_forward_experiment.py --workload 2.7b-8x4K --workload 2.7b-32x2K 2>&1 \
  | grep -v -i warn | tee "$OUT/call3-gluon-variants.txt"
one=(--clock-control none --kernel-name regex:_gluon_late --launch-skip 1 --launch-count 1)
timeout 150 ncu "${one[@]}" --section SourceCounters --section WarpStateStats --import-source no -f \
  -o "$OUT/src-gluon-8x4K" python3 benchmarks/results/h100-2026-11-25-twentyninth/gluon_ssd_forward_experiment.py --profile 2.7b-8x4K --variant early-cb+decays \
  > "$OUT/src-gluon.log" 2>&1
ncu -i "$OUT/src-gluon-8x4K.ncu-rep" --page source --csv --print-source sass > "$OUT/src-gluon-ecd-8x4K.csv" 2>> "$OUT/src-gluon.log"
python3 benchmarks/stall_summary.py "$OUT/src-gluon-ecd-8x4K.csv" --top 25 --context 2 > "$OUT/call3-stalls-gluon-ecd-8x4K.txt" 2>&1
head -50 "$OUT/call3-stalls-gluon-ecd-8x4K.txt"
gzip -f "$OUT/src-gluon-ecd-8x4K.csv"; rm -f "$OUT/src-gluon-8x4K.ncu-rep"
