#!/usr/bin/env bash
# Sixteenth session, eighth GPU call: compute-sanitizer (memcheck, racecheck) over the session's new kernels, the
# forward's preparation launch (every forward) and the tiles' cs launch (forced tiles), PyTorch's caching allocator
# off (every tensor its own allocation). The plain run first compiles and checks answers.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FLASHSSM_POISON_OUTPUTS=1
run="python3 benchmarks/sanitize.py --case ssd_tiles_spans --case ssd_handover --case ssd_varlen --case ssd_small
 --case ssd_big_tiles --fuzz-cases 0"
timeout 200 $run 2>&1 | grep -v -i warn | tee "$OUT/sanitize-plain.txt" | tail -5
for tool in memcheck racecheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 170 compute-sanitizer --tool $tool $run > "$OUT/sanitize-$tool.txt" 2>&1
  echo "$tool: exit $?; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitize-$tool.txt" | tail -1)"
  grep -E "^case_|sanitize driver" "$OUT/sanitize-$tool.txt"
done
