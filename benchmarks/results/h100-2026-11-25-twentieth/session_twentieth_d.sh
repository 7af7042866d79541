#!/usr/bin/env bash
# Twentieth session, fourth GPU call: mamba_ssm's CUDA selective scan built (in the background) while the final
# backward's loads-ahead are A/B'd once more (B/C a slot ahead alone against B/C and tile inputs ahead, the
# default, with the dstate-128 segments); then the Mamba-1 bench with mamba_ssm in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
(timeout 300 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/call4-build.txt" 2>&1; \
 echo "build exit $?" >> "$OUT/call4-build.txt") &
timeout 240 python3 benchmarks/ab_scan_ahead.py --variants bc,bc+tile m1train-2.8b-8x2K m1train-n128-1x1K \
  m1train-130m-1x8K 2>&1 | grep -v Warn | tee "$OUT/call4-ab-final.txt"
wait
tail -2 "$OUT/call4-build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then
  export PYTHONPATH=/tmp/sscuda:$PYTHONPATH
  timeout 280 python3 -m flashssm bench -w m1-2.8b-8x2K -w m1-2.8b-1x32K -w m1-n128-8x2K -w m1-130m-1x32K \
    -w m1train-2.8b-8x2K -w m1train-130m-1x8K -w m1train-n128-1x1K \
    -i flashssm -i mamba_ssm 2>&1 | grep -v Warn | tee "$OUT/call4-bench-m1.txt" | grep -E "^m1|^flashssm|^mamba"
fi
