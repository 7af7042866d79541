#!/usr/bin/env bash
# Seventy-first session, call 4 (one H200): call 3's Mamba-2 model reached NaN losses through torch.compile (inductor)
# where eager did not. Which kernel: the model's gradients compiled against eager's, parameter by parameter, with each
# of the gated norm, ssd_scan and conv1d swapped for its reference in turn (benchmarks/compiled_grads_check.py); 2
# layers of the 130M width, then the whole 24 with nothing swapped.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 260 python3 benchmarks/compiled_grads_check.py --layers 2 --steps 4 > "$OUT/grads-2.txt" 2>&1
timeout 200 python3 benchmarks/compiled_grads_check.py --layers 24 --steps 6 --swap none > "$OUT/grads-24.txt" 2>&1
grep -E "^swap|^    " "$OUT/grads-2.txt" "$OUT/grads-24.txt" | cut -c1-200 | head -80
