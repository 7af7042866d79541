#!/usr/bin/env bash
# Twenty-second session, fourth GPU call: compute-sanitizer memcheck over the selective-scan cases on the stored states
# in lane runs (dstate 256: 32 runs of 8; dstate 16 long and packed: 4 runs of 4), then the other GPU test files that
# run Mamba-1's scan (models, dispatch, checks).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
run="python3 benchmarks/sanitize.py --case scan_big_state --case scan_long --case scan_varlen --fuzz-cases 0"
FLASHSSM_POISON_OUTPUTS=1 timeout 200 $run 2>&1 | grep -v -i warn | tee "$OUT/call4-sanitize-plain.txt" | tail -3
FLASHSSM_POISON_OUTPUTS=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 170 compute-sanitizer --tool memcheck $run \
  > "$OUT/call4-sanitize-memcheck.txt" 2>&1
echo "memcheck: exit $?; $(grep -E "ERROR SUMMARY" "$OUT/call4-sanitize-memcheck.txt" | tail -1)"
grep -E "^case_|sanitize driver" "$OUT/call4-sanitize-memcheck.txt"
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/models/test_models.py \
  tests/ops/test_dispatch.py tests/ops/test_checks.py > "$OUT/call4-tests-other.txt" 2>&1
echo "tests: exit $?"; tail -2 "$OUT/call4-tests-other.txt"
