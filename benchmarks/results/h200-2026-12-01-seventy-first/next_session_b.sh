#!/usr/bin/env bash
# Prepared by the seventy-first session, not run. One H200, ~420 s. Why the conv's kernels traced into torch.compile's
# graph (conv.COMPILE_FORM = "kernel") gave the Mamba-2 model NaN gradients while the conv alone compiled right:
# compile_mixer_check.py (the conv alone with autocast's dtypes, x bf16 and weight, bias fp32, and the mixer's gradient
# layout; one 130M mixer under autocast with the traced kernels and with the reference), and what torch's analysis
# says each traced launch writes (compile_conv_check.py). Then what keeps torch.compile's reduce-overhead mode (CUDA
# graphs) from a Mamba-2 training step: the untracked tensors' allocation histories (model_step_compiled --history;
# suspected: the hand-over workspace's counter, flags and slots, made while cudagraph trees warm up on their stream),
# and whether a Mamba-1 step runs there (its scan takes a workspace too).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 120 python3 benchmarks/compile_mixer_check.py --form kernel > "$OUT/mixer-check.txt" 2>&1
timeout 80 python3 benchmarks/compile_conv_check.py > "$OUT/conv-check.txt" 2>&1
timeout 200 python3 benchmarks/model_step_compiled.py --preset mamba2-130m --preset mamba1-130m --layers 2 \
  --shape 1x512 --mode eager --mode reduce-overhead --steps 10 --history > "$OUT/reduce-overhead.txt" 2>&1
grep -hE "^conv|^mixer|^rms|^    " "$OUT/mixer-check.txt" "$OUT/conv-check.txt" | cut -c1-300
grep -E "step|failed|File .*flashssm" "$OUT/reduce-overhead.txt" | head -40
