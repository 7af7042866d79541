#!/usr/bin/env bash
# Forty-sixth session, call 5: forward + backward at batch 2 (m1train-2.8b-2x16K, where the backward's new segments
# gain the most) beside mamba_ssm's CUDA scan, built here first (.whl/ carried, as call 3).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/e"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 280 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/e/build.txt" 2>&1
tail -1 "$OUT/e/build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then export PYTHONPATH=/tmp/sscuda:$PYTHONPATH; fi
timeout 200 python3 -m flashssm bench -w m1train-2.8b-2x16K -i flashssm -i mamba_ssm 2>&1 | grep -v -i warn \
  | tee "$OUT/e/bench-m1.txt"
