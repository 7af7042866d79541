#!/usr/bin/env bash
# Seventy-first session, call 5 (one H200): with the fix (conv1d's and the gated norm's absent-tensor pointers now an
# input's, never an output's), the conv and the norm through torch.compile against eager in a Mamba-2 mixer's layouts,
# with torch's own analysis of what each kernel writes (compile_conv_check.py); then the 2-layer model's compiled
# gradients against eager's (compiled_grads_check.py, nothing swapped).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 120 python3 benchmarks/compile_conv_check.py > "$OUT/conv-check.txt" 2>&1
timeout 150 python3 benchmarks/compiled_grads_check.py --layers 2 --steps 3 --swap none > "$OUT/grads-2.txt" 2>&1
grep -E "^conv|^rms|^    |^swap" "$OUT/conv-check.txt" "$OUT/grads-2.txt" | cut -c1-260 | head -60
