#!/usr/bin/env bash
# Eighty-third session, call 3 (call 2 did not compile under Triton 3.6: its `own` choice, taken on a Python bool
# where TAILS is 0, broke ConvertTritonGPUToLLVM; now behind TAILS, and the TAILS = 0 kernel's SASS is the one before,
# offline, with Triton 3.6 and 3.9). The gathered last spans by the one sweep (the own state a run-time choice;
# offline under Triton 3.6: 15 and 3 spilled loads in the two hot loops) against the plan off, alternating, medians
# of 5; call 1 measured the two-copies form (-4.9 % / -6.2 % / +8.9 % at 1 x 128K / 32K / 8K). Then the tails tests.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward.ONE_WAVE_TAILS --value False \
  --value True --workload 2.7b-1x8K --workload 2.7b-1x32K --workload 2.7b-1x128K --rounds 5 --kernels \
  > "$OUT/ab-one-sweep.txt" 2>&1
echo "ab rc $?"; grep -v -i warn "$OUT/ab-one-sweep.txt" | grep -v decays | tail -12 | cut -c1-200
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 7 \
  tests/ops/test_ssd_forward.py -k "tails or gluon_run_time_span" > "$OUT/tests-tails.txt" 2>&1
echo "tests rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests-tails.txt" | tail -20 | cut -c1-250
