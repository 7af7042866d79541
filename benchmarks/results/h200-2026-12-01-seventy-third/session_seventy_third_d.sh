#!/usr/bin/env bash
# Seventy-third session, call 4 (one H200). (1) The spread of a small model's gradients between runs and under
# save_on_cpu (call 3: test_recompute_steps_aside_under_the_callers_hooks failed on A_log's gradient at 1e-5 of its
# largest; call 2 had passed it): benchmarks/hooks_grad_spread.py. (2) Why activation checkpointing cost the 370m
# 8 x 2K step +75-95 % (call 3's bench; one more forward a layer, ~+33 %, was expected): recompute_profile.py
# --checkpointing, alternating, then the kernels and torch calls that differ.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 90 python3 benchmarks/hooks_grad_spread.py > "$OUT/spread.txt" 2>&1
timeout 200 python3 benchmarks/recompute_profile.py --preset mamba2-370m --shape 8x2048 --checkpointing --top 24 \
  > "$OUT/profile-checkpointing.txt" 2>&1
cat "$OUT/spread.txt"; grep -v USDT "$OUT/profile-checkpointing.txt" | head -60
