#!/usr/bin/env bash
# Forty-third session, call 3: the outputs-in-u's-layout test now also packed (GPU), the packed fp32 GPU tests, the
# whole Mamba-1 mixer at batch 1 (call 2's limit cut it), with its warnings shown, and the dstate 128 packings'
# backward in rows with segments against the packed row (cut off in the forty-second session and in calls 1-2).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT/c"
timeout ${TESTS_S:-150} python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=line -n 14 \
  tests/ops/test_selective_scan.py -k "keep_u_layout or row_alignments or gpu_fp32 or segments_through" \
  > "$OUT/c/tests-full.txt" 2>&1
echo "pytest rc $?"
grep -E "FAILED|ERROR|^E |passed|failed| Error" "$OUT/c/tests-full.txt" | grep -v "PASSED" | tail -40 | tee "$OUT/c/tests.txt"
timeout 130 python3 benchmarks/mixer1_layout.py --shape 1x16384 --shape 1x16383 2>&1 | tee "$OUT/c/mixer.txt"
timeout ${AB_S:-240} python3 benchmarks/ab_packed_scan_bwd.py --scan 8x1024 --scan 1x4096 --dstate 128 --rounds 3 \
  --forms "batch-1 row,rows segments" 2>&1 | grep -v -i warn | tee "$OUT/c/ab-n128.txt"
