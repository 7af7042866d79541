#!/usr/bin/env bash
# Forty-third session, call 2: after the dstate 256 compile fix (row marks on [BLOCK_D]) and selective_scan's outputs
# in u's layout (scan.OUTPUTS_LIKE_U):
# 1. GPU tests: bf16 against float64 at every dstate (256's backward failed to compile in call 1), the rows'
#    alignments, the outputs' layout, the custom ops' fakes against real (the layouts), the compiled mixers' training.
# 2. The scan in the mixer's layout, outputs like u against tokens contiguous, at 2048 and 2047 (forward, training).
# 3. The whole Mamba-1 mixer (2.8B shape), the same A/B.
# 4. The dstate 128 packings' backward in rows with segments against the packed row (call 1 ran out of time).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT/b"
timeout ${TESTS_S:-230} python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=line -n 14 \
  tests/ops/test_selective_scan.py -k "gpu_bf16_against or row_alignments or keep_u_layout or noncontiguous" \
  tests/ops/test_custom_op_layouts.py "tests/models/test_models.py::test_mixer_compiles_without_graph_breaks" \
  > "$OUT/b/tests-full.txt" 2>&1
echo "pytest rc $?"
grep -E "FAILED|ERROR|^E |passed|failed| Error" "$OUT/b/tests-full.txt" | grep -v "PASSED" | tail -40 | tee "$OUT/b/tests.txt"
timeout 70 python3 benchmarks/odd_length_scan.py --channels-last --outputs like-u --outputs tokens 2>&1 \
  | grep -v -i warn | tee "$OUT/b/scan-fwd.txt"
timeout 90 python3 benchmarks/odd_length_scan.py --channels-last --train --outputs like-u --outputs tokens 2>&1 \
  | grep -v -i warn | tee "$OUT/b/scan-train.txt"
timeout 120 python3 benchmarks/mixer1_layout.py 2>&1 | grep -v -i warn | tee "$OUT/b/mixer.txt"
timeout ${AB_S:-60} python3 benchmarks/ab_packed_scan_bwd.py --scan 8x1024 --scan 1x4096 --dstate 128 --rounds 3 \
  --forms "batch-1 row,rows segments" 2>&1 | grep -v -i warn | tee "$OUT/b/ab-n128.txt"
