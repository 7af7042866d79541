#!/usr/bin/env bash
# Sixty-fourth session, call 3 (about 560 s; carry .whl with the mamba_ssm and fla wheels built as shared/ANCHORS.md
# says): the working tree of call 2 (fma exponents, the raw dt's gradient in the decay gradient's launch).
# 1. The backward's GPU tests call 2 did not reach: real shapes (dt_bias, softplus, D, z, initial states), packed,
#    the bf16 error figures, the decay gradient's head blocks (the clamped, strided raw dt), deterministic repeats.
# 2. The issue tables with the peers in one run: SSD forward (issue 3) and forward + backward (issue 4).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/bench"
export PYTHONUNBUFFERED=1
P="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q"
Fb=tests/ops/test_ssd_backward.py
PYTHONPATH=$PWD timeout 150 $P $Fb -k "gpu_real_shapes" > "$OUT/tests-a.txt" 2>&1 &
PYTHONPATH=$PWD timeout 150 $P $Fb -k "gpu_varlen_real or gpu_bf16_error or da_head_blocks or gpu_deterministic_repeats" \
  -s > "$OUT/tests-b.txt" 2>&1 &
wait
for f in "$OUT"/tests-*.txt; do echo "== $f"; grep -E "passed|failed|^FAILED" "$f" | tail -6 | cut -c1-300; done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
ssd="-w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K -w 2.7b-32x2K -w accuracy-2x1K"
timeout 220 python3 -m flashssm bench $ssd -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla \
  > "$OUT/bench/ssd-forward.txt" 2>&1
echo "ssd forward rc $?"; grep -v -i warn "$OUT/bench/ssd-forward.txt" | tail -20 | cut -c1-220
timeout 180 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i mamba_ssm > "$OUT/bench/ssd-train.txt" 2>&1
echo "ssd train rc $?"; grep -v -i warn "$OUT/bench/ssd-train.txt" | tail -10 | cut -c1-220
