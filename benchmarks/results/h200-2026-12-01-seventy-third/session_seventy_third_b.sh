#!/usr/bin/env bash
# Seventy-third session, call 2 (one H200). (1) The fix for backwards under saved-tensor hooks that change layouts
# (save_on_cpu on a GPU: call 1's test_recompute_steps_aside_under_the_callers_hooks got NaN in a gradient): the new
# test, the prepared-call file and the recompute file on the GPU. (2) Where the recompute's +27 % on the 370m 8 x 2K
# step goes (call 1's bench: 161.7 -> 206.0 ms, ~5 % predicted): benchmarks/recompute_profile.py, both tensors, then
# each alone.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/test_prepared.py tests/models/test_recompute.py > "$OUT/tests.txt" 2>&1
for part in "" conv norm; do
  timeout 120 python3 benchmarks/recompute_profile.py --preset mamba2-370m --shape 8x2048 ${part:+--part $part} \
    > "$OUT/profile${part:+-$part}.txt" 2>&1
done
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head; tail -1 "$OUT/tests.txt"
for f in "$OUT"/profile*.txt; do grep -v USDT "$f" | head -40; done
