#!/usr/bin/env bash
# Seventy-third session, call 6 (one H200). The GPU test files the session's changes reach, on the final tree: the
# backward key that now holds every saved tensor (every training call's replay: the SSD backward's and the selective
# scan's files, the prepared-call file), the checkpoints made contiguous, activation checkpointing and the models'
# tolerance (tests/models).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 480 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/ops/test_ssd_backward.py tests/ops/test_selective_scan.py tests/test_prepared.py tests/models \
  > "$OUT/tests.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head -20; tail -1 "$OUT/tests.txt"
