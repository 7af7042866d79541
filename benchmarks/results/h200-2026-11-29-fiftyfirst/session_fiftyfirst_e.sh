#!/usr/bin/env bash
# Fifty-first session, call 5: selective_scan's inference calls replayed (prepared calls, torch calls recorded).
# (1) test_prepared + test_launch on the GPU; (2) the selective_scan fuzzer for a minute (each case now checks that a
# repeated call's replay gives the whole path's bits); (3) ab_scan_host.py: host time and do_bench of the 2.8B mixer's
# call at 1x128 and 1x1024, prepared calls off and on.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/e"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 100 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 6 \
  tests/test_prepared.py tests/test_launch.py > "$OUT/e/tests-prepared.txt" 2>&1 &
timeout 90 python3 -m tests.fuzz.fuzz --seed 52 --budget 60 --ops selective_scan > "$OUT/e/fuzz.txt" 2>&1 &
wait
for f in "$OUT"/e/tests-prepared.txt "$OUT"/e/fuzz.txt; do echo "$f"; grep -E "FAILED|ERROR|passed|failed|cases" "$f" | tail -8; done
timeout 100 python3 benchmarks/ab_scan_host.py --seqlen 128 --seqlen 1024 --rounds 5 --calls 200 \
  > "$OUT/e/ab-scan-host.txt" 2>&1
cat "$OUT/e/ab-scan-host.txt"
