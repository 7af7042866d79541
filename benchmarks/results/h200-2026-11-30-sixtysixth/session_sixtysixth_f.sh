#!/usr/bin/env bash
# Sixty-sixth session, call 6 (about 300 s; carry .whl): the README's model-level profile again (it dates from the
# first session, before the SSD backward's rewrite): Mamba-2 2.7B training, 8x4K, 16 of its 64 layers, flashssm
# against mamba_ssm's pure-Python install (Triton SSD and norms, nn.Conv1d), one step after warm-up, no ncu.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/gpu.txt"
timeout 420 python3 -m flashssm profile --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 \
  --compare flashssm mamba_ssm --out "$OUT/profile" > "$OUT/profile.txt" 2>&1
echo "== profile rc $?"; grep -v -i warn "$OUT/profile.txt" | tail -30 | cut -c1-200
