#!/usr/bin/env bash
# Prepared for the next session (not run; ~420 s; carry .whl with the mamba_ssm and fla wheels built as
# shared/ANCHORS.md says): the SSD issue tables with the peers in one run again. README's "Where it stands" rows come
# from the sixty-fourth to seventieth sessions' runs; the last run with every peer is the sixty-fourth's. No SSD kernel
# changed since the seventieth session, so this is a re-measure, not an A/B: the figures the README quotes should
# hold within the runs' spread (forward 8 x 4K 2.89-2.92x mamba_ssm's, training 8 x 4K 2.35x, 1 x 32K 1.97x).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
ssd="-w 2.7b-1x2K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K -w 2.7b-32x2K -w accuracy-2x1K"
timeout 240 python3 -m flashssm bench $ssd -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla \
  > "$OUT/ssd-forward.txt" 2>&1
echo "ssd forward rc $?"; grep -v -i warn "$OUT/ssd-forward.txt" | tail -24 | cut -c1-220
timeout 180 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i mamba_ssm > "$OUT/ssd-train.txt" 2>&1
echo "ssd train rc $?"; grep -v -i warn "$OUT/ssd-train.txt" | tail -14 | cut -c1-220
