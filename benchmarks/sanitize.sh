#!/usr/bin/env bash
# compute-sanitizer over every kernel (issue 9), on the GPU machine:
#   bash benchmarks/sanitize.sh [TOOL ...]        (default: memcheck racecheck synccheck)
# 1. benchmarks/sanitize.py once without the sanitizer: compiles every kernel into Triton's cache
#    (so the instrumented runs load kernels rather than compile them) and checks the answers;
# 2. the planted out-of-bounds write under memcheck: it must be reported, or a clean run below
#    would prove nothing;
# 3. the driver under each tool. PyTorch's caching allocator is off, so that every tensor is its
#    own allocation and a read or write past a tensor's end is past an allocation's end.
# Logs in $OUT/sanitize-*.txt; the summary line of each in $OUT/sanitize-summary.txt.
# FUZZ_CASES (default 24) random fuzz cases are run after the targeted ones. PARALLEL=1 runs the tools at once after
# the plain run (one GPU, each its own process: the instrumentation's time is mostly the host's); SANITIZE_TIMEOUT
# (default 200 s) bounds each tool's run, PLAIN_TIMEOUT (300 s) the plain one, PLAIN=0 skips it. CASES="a b": only
# those targeted cases (names without case_).
set -uo pipefail
OUT=${OUT:-sanitize-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTORCH_NO_CUDA_MEMORY_CACHING=1 FLASHSSM_POISON_OUTPUTS=1
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(memcheck racecheck synccheck)
cases=${FUZZ_CASES:-24}
only=()
for c in ${CASES:-}; do only+=(--case "$c"); done
summary="$OUT/sanitize-summary.txt"
: > "$summary"

if [ "${PLAIN:-1}" != 0 ]; then
  start=$SECONDS
  timeout "${PLAIN_TIMEOUT:-300}" python3 benchmarks/sanitize.py --fuzz-cases "$cases" "${only[@]}" \
    > "$OUT/sanitize-plain.txt" 2>&1
  echo "plain run: exit $? in $((SECONDS - start)) s; $(tail -1 "$OUT/sanitize-plain.txt")" | tee -a "$summary"
fi

timeout 120 compute-sanitizer --tool memcheck python3 benchmarks/sanitize.py --plant > "$OUT/sanitize-plant.txt" 2>&1
if grep -q "Invalid __global__ write" "$OUT/sanitize-plant.txt"; then
  echo "planted out-of-bounds write: reported by memcheck (the check works)" | tee -a "$summary"
else
  echo "planted out-of-bounds write: NOT reported; the runs below prove nothing" | tee -a "$summary"
fi

run_tool() {
  local tool=$1 extra=() start rc verdict
  [ "$tool" = memcheck ] && extra=(--leak-check no --check-device-heap yes)
  # analysis: one report per pair of source locations, not per address (a benign duplicate write in a
  # replicated layout is otherwise thousands of lines)
  [ "$tool" = racecheck ] && extra=(--racecheck-report analysis)
  start=$SECONDS
  timeout "${SANITIZE_TIMEOUT:-200}" compute-sanitizer --tool "$tool" "${extra[@]}" --print-limit 50 \
    --error-exitcode 86 python3 benchmarks/sanitize.py --fuzz-cases "$cases" "${only[@]}" \
    > "$OUT/sanitize-$tool.txt" 2>&1
  rc=$?
  verdict=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitize-$tool.txt" | tail -1)
  if [ "$tool" = racecheck ]; then
    # a write-write pair at one instruction is Triton's layout conversion of a replicated tile: the
    # threads that hold copies of an element store the same value to the same shared address.
    # Anything else (a read against a write, two different instructions) would be a missing barrier.
    verdict="$verdict; $(awk '/Race reported between/ {a = $0; sub(/.*between /, "", a); next}
      /^=========     and / && a != "" {b = $0; sub(/.*and /, "", b); n = b; sub(/.*\[/, "", n); sub(/ hazards\].*/, "", n)
        sub(/ \[.*/, "", b); if (a == b && a ~ /^Write/) { same += n } else { other += n; print "  OTHER: " a " / " b > "/dev/stderr" }
        a = ""}
      END {printf "%d same-instruction duplicate writes, %d other hazards", same, other}' "$OUT/sanitize-$tool.txt" 2>>"$summary")"
  fi
  echo "$tool: exit $rc in $((SECONDS - start)) s; ${verdict:-no summary (timed out?)}; $(grep '^sanitize driver' "$OUT/sanitize-$tool.txt")" \
    | tee -a "$summary"
}

if [ "${PARALLEL:-0}" = 1 ]; then
  for tool in "${tools[@]}"; do run_tool "$tool" & done
  wait
else
  for tool in "${tools[@]}"; do run_tool "$tool"; done
fi
