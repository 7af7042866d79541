#!/usr/bin/env bash
# Seventy-first session, call 6 (one H200): call 5's fix (absent pointers an input's) left the compiled 2-layer model's
# NaN as it was, and the conv alone compiled as eager. Does one mixer under bf16 autocast reproduce it, and the conv
# alone with autocast's dtypes and the mixer's gradient layout (compile_mixer_check.py)?
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 170 python3 benchmarks/compile_mixer_check.py > "$OUT/mixer-check.txt" 2>&1
grep -E "^conv|^mixer" "$OUT/mixer-check.txt" | cut -c1-300
