#!/usr/bin/env bash
# Ready for the next session (about 450 s): the two SSD test files whole on the GPU. The backward's ran whole in call 4
# before this session's test fixes (10 failures, all spies counting compile-ahead's dry run; the 21 tests around them
# passed in call 5 after the fix): its first whole run since. The forward's passed whole in call 6 (447): a control.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_ssd_backward.py > "$OUT/a/tests-ssd-backward.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-ssd-backward.txt" | tail -8
timeout 240 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 10 \
  tests/ops/test_ssd_forward.py > "$OUT/a/tests-ssd-forward.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-ssd-forward.txt" | tail -8
