#!/usr/bin/env bash
# The sixty-ninth session's next_session_a.sh, run as the seventieth session's first call (nvidia-h200-x2, ~400 s).
# Call 6 of the sixty-ninth ran every test file but the two SSD ones on one GPU and hit its limit with one failure
# whose name its quiet output never printed (tests/conftest.py now names each failure, with its seed, as reported). This runs the same files on two GPUs, GPU 0 the selective-scan files,
# GPU 1 the rest; then the failures alone again, to tell a flaky draw from a steady one.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
cd /tmp/xrepo
ARGS=(-q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 --dist worksteal)
SCAN=$(ls tests/ops/test_selective_scan*.py)
REST=$(ls tests/ops/test_*.py tests/models/test_*.py tests/test_*.py | grep -v "test_ssd_forward\|test_ssd_backward\|test_selective_scan")
CUDA_VISIBLE_DEVICES=0 timeout 330 python3 -m pytest "${ARGS[@]}" $SCAN > "$OUT/tests-scan.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 330 python3 -m pytest "${ARGS[@]}" $REST tests/bench tests/profile > "$OUT/tests-rest.txt" 2>&1 &
wait
for f in tests-scan tests-rest; do
  echo "== $f"; grep -E "^(FAILED|ERROR)" "$OUT/$f.txt" | sort -u | tail -12; grep -E "passed|failed" "$OUT/$f.txt" | tail -2
done
FAILED=$(grep -hoE "^(FAILED|ERROR) tests/[^ ]+" "$OUT"/tests-*.txt | awk '{print $2}' | sed 's/ *(.*//' | sort -u)
if [ -n "$FAILED" ]; then
  CUDA_VISIBLE_DEVICES=0 timeout 120 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider --tb=long $FAILED \
    > "$OUT/tests-failed-again.txt" 2>&1
  echo "== again"; tail -30 "$OUT/tests-failed-again.txt"
fi
