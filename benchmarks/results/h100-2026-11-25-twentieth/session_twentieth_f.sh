#!/usr/bin/env bash
# Twentieth session, sixth GPU call: compute-sanitizer over the selective-scan cases with the loads ahead (dstate 256
# now runs its backward in segments; packed sequences with empty and one-token ones). Call 5's attempt timed out
# while compiling; here the plain run compiles first, with room.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
run="python3 benchmarks/sanitize.py --case scan_big_state --case scan_varlen --fuzz-cases 0"
FLASHSSM_POISON_OUTPUTS=1 timeout 250 $run 2>&1 | grep -v -i warn | tee "$OUT/call6-sanitize-plain.txt" | tail -3
for tool in memcheck racecheck; do
  FLASHSSM_POISON_OUTPUTS=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool $tool $run \
    > "$OUT/call6-sanitize-$tool.txt" 2>&1
  echo "$tool: exit $?; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/call6-sanitize-$tool.txt" | tail -1)"
  grep -E "^case_|sanitize driver" "$OUT/call6-sanitize-$tool.txt"
done
