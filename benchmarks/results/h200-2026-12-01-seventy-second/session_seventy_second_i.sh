#!/usr/bin/env bash
# Seventy-second session, ninth call, on the last ~160 s of device time: the recompute's tests on the GPU
# (tests/models/test_recompute.py: gradients bit for bit, the conv's and norm's outputs freed and remade once, the
# prepared calls and direct launches the CPU does not take).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 90 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 12 \
  tests/models/test_recompute.py > "$OUT/tests.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head; tail -1 "$OUT/tests.txt"; grep -E "^E  " "$OUT/tests.txt" | head
