#!/usr/bin/env bash
# Thirtieth session, call 6 (carry .whl): the early Gluon forward with the fix (the running state kept live after
# the sweep: ptxas miscompiled the loop without it, calls 2-5). The SSD forward GPU tests, the A/B against the Triton
# kernel on every forward workload, then the forward bench with mamba_ssm and fla in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py \
  > "$OUT/call6-tests-fwd.txt" 2>&1
grep -E "^FAILED|passed|failed" "$OUT/call6-tests-fwd.txt" | tail -20
timeout 150 python3 benchmarks/ab_gluon_forward.py --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-1x2K \
  --workload 2.7b-1x8K --workload 2.7b-1x32K --workload 2.7b-1x128K > "$OUT/call6-ab-gluon.txt" 2>&1
grep -v -i warn "$OUT/call6-ab-gluon.txt"
timeout 220 bash benchmarks/gpu_run.sh bench -- -w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K \
  -w 2.7b-32x2K -w accuracy-2x1K -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla > "$OUT/call6-bench-log.txt" 2>&1
tail -40 "$OUT/call6-bench-log.txt"
rm -f "$OUT/bench.png"
