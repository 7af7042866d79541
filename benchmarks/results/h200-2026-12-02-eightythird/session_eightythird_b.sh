#!/usr/bin/env bash
# Eighty-third session, call 2. Call 1's gathered last spans (a second, late-form copy of the sweep in the kernel)
# gave 1 x 128K -4.9 %, 1 x 32K -6.2 %, but 1 x 8K +8.9 % where -9 % was predicted. One guess: an SM whose two
# programs run the two copies' loops (~15 KB of code each) misses in its instruction cache. Here the same plan by one
# sweep, the own state a run-time choice (TAILS_TWO False: 14 spilled loads in each hot loop, offline), against the
# two copies (TAILS_TWO True), each against the plan off, alternating, medians of 5, each in its own process.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
W="--workload 2.7b-1x8K --workload 2.7b-1x32K --workload 2.7b-1x128K"
for two in False True; do
  timeout 200 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward.ONE_WAVE_TAILS --value False \
    --value True $W --rounds 5 --kernels --set flashssm.ops.ssd.forward_gluon.TAILS_TWO=$two \
    > "$OUT/ab-two-$two.txt" 2>&1
  echo "TAILS_TWO $two rc $?"; grep -v -i warn "$OUT/ab-two-$two.txt" | grep -v decays | tail -12 | cut -c1-200
done
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 7 \
  tests/ops/test_ssd_forward.py -k "tails" > "$OUT/tests-tails.txt" 2>&1
echo "tests rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests-tails.txt" | tail -20 | cut -c1-250
