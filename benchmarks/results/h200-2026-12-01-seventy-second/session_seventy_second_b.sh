#!/usr/bin/env bash
# Run by the seventy-second session as its second call (prepared by the seventy-first as next_session_b.sh). One H200, ~400 s.
# conv (the default since the seventy-first session; next_session_a.sh ran the custom ops). Why the conv's kernels traced into torch.compile's
# graph (conv.COMPILE_FORM = "kernel") gave the Mamba-2 model NaN gradients while the conv alone compiled right:
# compile_mixer_check.py (the conv alone with autocast's dtypes, x bf16 and weight, bias fp32, and the mixer's gradient
# layout; one 130M mixer under autocast with the traced kernels and with the reference), and what torch's analysis
# says each traced launch writes (compile_conv_check.py).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 170 python3 benchmarks/model_step_compiled.py --preset mamba2-130m --shape 1x512 --mode eager \
  --mode default --steps 20 --conv-form reference --norm-form kernel > "$OUT/compiled-mamba2-reference.txt" 2>&1
timeout 120 python3 benchmarks/compile_mixer_check.py --form kernel > "$OUT/mixer-check.txt" 2>&1
timeout 80 python3 benchmarks/compile_conv_check.py > "$OUT/conv-check.txt" 2>&1
grep -hE "^conv|^mixer|^rms|^    " "$OUT/mixer-check.txt" "$OUT/conv-check.txt" | cut -c1-300
grep -hE "step|failed" "$OUT/compiled-mamba2-reference.txt" | grep -v "^ *File\|Warn" | tail -3
