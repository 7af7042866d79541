#!/usr/bin/env bash
# Eighty-first session, call 2: mamba_ssm's CUDA selective scan built from the carried sdist (sm_90, ~125 s), then the
# Mamba-1 bench beside it in the same run (the README's ratio to it is the forty-sixth session's, before the
# seventy-ninth's forward and the eightieth's backward changes).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
timeout 240 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/build.txt" 2>&1
echo "build rc $?" >> "$OUT/build.txt"
tail -2 "$OUT/build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then export PYTHONPATH=/tmp/sscuda:$PYTHONPATH; fi
timeout 200 python3 -m flashssm bench -w m1-2.8b-8x2K -w m1-2.8b-1x32K -w m1-n128-8x2K -w m1train-2.8b-8x2K \
  -w m1train-2.8b-1x32K -i flashssm -i mamba_ssm --json "$OUT/bench-m1.json" > "$OUT/bench-m1.txt" 2>&1
echo "bench rc $?" >> "$OUT/bench-m1.txt"
tail -30 "$OUT/bench-m1.txt"
