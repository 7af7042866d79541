#!/usr/bin/env bash
# Prepared by the sixty-seventh session, not run (its device time was spent; < 190 s): call 8's test of SPLIT_GRAD_SINK compared gradients bit for bit, which the
# GPU's kernel variants for other strides do not give (the loss was equal): again with fp32's tolerance there; then the
# step's wall time without the profiler (`bench model`, the 370m training scenario, off / on / off / on), since call
# 8's profiled step did not move with its GPU time (-9.4 ms busy, +0.9 ms wall).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 40 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/models/test_models.py \
  -k "split_grad_sink" > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; tail -1 "$OUT/tests.txt")
for v in False True False True; do
  timeout 35 python3 benchmarks/with_switches.py flashssm.modules.mamba2.SPLIT_GRAD_SINK=$v -- bench model \
    -s train-370m-8x2K -i flashssm --repeat 5 > "$OUT/bench-$v.txt" 2>&1
  echo "== bench $v rc $?"; grep -i -E "train|tok" "$OUT/bench-$v.txt" | grep -v -i warn | tail -2 | cut -c1-160
done
