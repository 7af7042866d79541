#!/usr/bin/env bash
# Seventy-second session, fourth call. One H200, ~450 s. Call 3 found reduce-overhead trains the 2-layer models as
# eager once the hand-over workspace is made off the calling thread (Mamba-2 8.15 -> 2.86 ms a step). Here the full
# 24-layer 130M models: eager, torch.compile and reduce-overhead with the workspace off-thread and the conv and norms
# as custom ops (call 1: they train as eager), at 1 x 512 (host-bound) and 4 x 2048 (more GPU); and the compiled
# step with the conv as its reference at 4 x 2048, against the custom op (the choice of conv.COMPILE_FORM's default).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 200 python3 benchmarks/model_step_compiled.py --preset mamba2-130m --preset mamba1-130m --shape 1x512 \
  --mode eager --mode reduce-overhead --steps 20 --conv-form custom_op --norm-form custom_op --workspace-off-thread \
  > "$OUT/ro-1x512.txt" 2>&1
timeout 150 python3 benchmarks/model_step_compiled.py --preset mamba2-130m --shape 4x2048 \
  --mode eager --mode default --mode reduce-overhead --steps 10 --conv-form custom_op --norm-form custom_op \
  --workspace-off-thread > "$OUT/ro-4x2048.txt" 2>&1
timeout 90 python3 benchmarks/model_step_compiled.py --preset mamba2-130m --shape 4x2048 \
  --mode eager --mode default --steps 10 --conv-form reference --norm-form kernel > "$OUT/reference-4x2048.txt" 2>&1
grep -hE "step|failed" "$OUT"/*.txt | grep -v "^ *File\|Warn" | cut -c1-260
