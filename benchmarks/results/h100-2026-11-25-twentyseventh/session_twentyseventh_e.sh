#!/usr/bin/env bash
# Twenty-seventh session, call 5: the GPU tests of the SSD forward file (its early sweep moved into `_own_state`), then
# compute-sanitizer memcheck and racecheck over the new halves case of the sanitizer driver (two chunks a program in
# the recompute and the chain launch, a last span of one chunk, the deterministic mode's carry).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py 2>&1 \
  | tee "$OUT/call5-tests-fwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
export PYTORCH_NO_CUDA_MEMORY_CACHING=1 FLASHSSM_POISON_OUTPUTS=1
timeout 120 python3 benchmarks/sanitize.py --case ssd_halves --fuzz-cases 0 2>&1 | tail -2 | tee "$OUT/call5-sanitize-plain.txt"
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool $tool python3 benchmarks/sanitize.py --case ssd_halves --fuzz-cases 0 \
    > "$OUT/call5-sanitize-$tool.txt" 2>&1
  echo "$tool: exit $?; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/call5-sanitize-$tool.txt" | tail -1); $(grep -E '^case_|sanitize driver' "$OUT/call5-sanitize-$tool.txt" | tr '\n' ' ')"
done
