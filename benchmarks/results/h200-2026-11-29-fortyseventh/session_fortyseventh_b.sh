#!/usr/bin/env bash
# Forty-seventh session, call 2 (call 1 was the forty-sixth's next_session_a.sh: 106 of the file's tests passed, none
# failed, six were still compiling at its 330 s limit; the bench's 1x32K row ran, the rest hit its limit).
#   1. those six tests, alone;
#   2. the shapes the forty-sixth session's rules decide unmeasured: the 130M forward at 7 x 8K (early segments,
#      against four lanes), the packed backward with long sequences (rows against the dense batch's backward), the
#      mixer-layout forward at 16 x 2K (one lane, against the contiguous layout's pick).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
T=tests/ops/test_selective_scan.py
timeout 300 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 6 \
  "$T::test_backward_layouts[lanes1-tile4-chunk8]" "$T::test_gpu_bf16_error_figures" \
  "$T::test_gpu_segments_through_the_public_path" "$T::test_segments[fwd(2,8,16)-bwd(4,8,8,8)-late]" \
  > "$OUT/b/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/b/tests.txt" | tail -12
timeout 100 python3 benchmarks/ab_forward_configs.py --shape 7x8192x1536 --config 4,8,2,16 --rounds 5 \
  2>&1 | grep -v -i warn | tee "$OUT/b/fwd-7x8K-130m.txt"
timeout 80 python3 benchmarks/ab_forward_configs.py --shape 16x2048-mixer --rounds 5 \
  2>&1 | grep -v -i warn | tee "$OUT/b/fwd-16x2K-mixer.txt"
for s in "--scan 2x16384" "--scan 2x16384 --ragged" "--scan 1x16384"; do
  timeout 100 python3 benchmarks/ab_packed_scan_bwd.py $s --forms dense,rows --rounds 5 2>&1 | grep -v -i warn
done | tee "$OUT/b/packed-bwd.txt"
