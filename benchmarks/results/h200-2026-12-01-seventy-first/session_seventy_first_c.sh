#!/usr/bin/env bash
# Seventy-first session, call 3 (one H200): a small model's training step is bound by its host work (call 2: the 130M
# Mamba-2 model's 1 x 512 step ~60 ms). Eager against torch.compile and torch.compile's CUDA graphs
# (reduce-overhead): do flashssm's custom ops train correctly captured (losses over 6 steps against eager's), and what
# does each mode's step take (benchmarks/model_step_compiled.py).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 300 python3 benchmarks/model_step_compiled.py --preset mamba2-130m --shape 1x512 --steps 20 \
  > "$OUT/compiled-mamba2.txt" 2>&1
timeout 200 python3 benchmarks/model_step_compiled.py --preset mamba1-130m --shape 1x512 --steps 20 \
  > "$OUT/compiled-mamba1.txt" 2>&1
for f in compiled-mamba2 compiled-mamba1; do grep -E "step|failed|Error" "$OUT/$f.txt" | grep -v "^ *File\|Warn" | tail -6; done
