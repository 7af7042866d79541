#!/usr/bin/env bash
# Eighty-third session, call 4: the two-copies form of the gathered last spans (call 1's, now only where the last
# spans are >= 2048 tokens: 1 x 32K and 1 x 128K of the 2.7B shape, not 1 x 8K) checked and benched. The SSD forward
# GPU file whole (the tails tests among them), then the forward rows with mamba_ssm and fla in the same run (carry
# .whl), so that the README's and issue 3's ratios come from one run.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONUNBUFFERED=1
PYTHONPATH=. timeout 250 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 7 \
  --dist worksteal tests/ops/test_ssd_forward.py > "$OUT/tests-forward.txt" 2>&1
echo "tests rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests-forward.txt" | tail -20 | cut -c1-250
export PYTHONPATH=$PWD:/tmp/site
ssd="-w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K -w 2.7b-32x2K"
timeout 240 python3 -m flashssm bench $ssd -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla \
  > "$OUT/ssd-forward.txt" 2>&1
echo "ssd forward rc $?"; grep -v -i warn "$OUT/ssd-forward.txt" | tail -24 | cut -c1-220
