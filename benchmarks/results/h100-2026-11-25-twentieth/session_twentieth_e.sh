#!/usr/bin/env bash
# Twentieth session, fifth GPU call: the selective-scan test file on the GPU (the loads ahead, the dstate-64
# segments through the public path), and compute-sanitizer over the selective-scan cases (dstate 256 now runs its
# backward in segments).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 330 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py 2>&1 \
  | tail -15 | tee "$OUT/call5-tests-scan.txt"
run="python3 benchmarks/sanitize.py --case scan_big_state --case scan_long --case scan_varlen --fuzz-cases 0"
FLASHSSM_POISON_OUTPUTS=1 timeout 60 $run 2>&1 | grep -v -i warn | tee "$OUT/call5-sanitize-plain.txt" | tail -3
for tool in memcheck racecheck; do
  FLASHSSM_POISON_OUTPUTS=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 compute-sanitizer --tool $tool $run \
    > "$OUT/call5-sanitize-$tool.txt" 2>&1
  echo "$tool: exit $?; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/call5-sanitize-$tool.txt" | tail -1)"
  grep -E "^case_|sanitize driver" "$OUT/call5-sanitize-$tool.txt"
done
