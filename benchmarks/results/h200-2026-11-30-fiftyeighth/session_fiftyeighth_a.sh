#!/usr/bin/env bash
# Fifty-eighth session, call 1 (about 550 s; carry .whl with the mamba_ssm and fla wheels built as shared/ANCHORS.md
# says): the issue tables in one run, none since the fifty-second session's. SSD forward (issue 3) and forward +
# backward (issue 4) on the 2.7B shape against mamba_ssm and fla, the selective scan (issue 5) against its floor.
# (The fifty-seventh session's next_session_a.sh.)
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/bench"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
ssd="-w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K -w 2.7b-32x2K -w accuracy-2x1K"
timeout 220 python3 -m flashssm bench $ssd -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla \
  > "$OUT/bench/ssd-forward.txt" 2>&1
echo "ssd forward rc $?"; grep -v -i warn "$OUT/bench/ssd-forward.txt" | tail -20 | cut -c1-220
timeout 180 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i mamba_ssm > "$OUT/bench/ssd-train.txt" 2>&1
echo "ssd train rc $?"; grep -v -i warn "$OUT/bench/ssd-train.txt" | tail -10 | cut -c1-220
timeout 140 python3 -m flashssm bench -w m1-2.8b-8x2K -w m1-2.8b-1x32K -w m1train-2.8b-8x2K -w m1train-2.8b-1x32K \
  -i flashssm > "$OUT/bench/scan.txt" 2>&1
echo "scan rc $?"; grep -v -i warn "$OUT/bench/scan.txt" | tail -10 | cut -c1-220
