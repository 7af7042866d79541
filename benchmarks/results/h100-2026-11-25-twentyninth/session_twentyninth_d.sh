#!/usr/bin/env bash
# Twenty-ninth session, call 4 (carry .whl): the Gluon late-publish forward in the package (forward_gluon.py). The SSD
# forward GPU tests (the new Gluon ones among them), then the forward bench with mamba_ssm and fla in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 280 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py 2>&1 \
  | tee "$OUT/call4-tests-fwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -30
bash benchmarks/gpu_run.sh bench -- -w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K \
  -w 2.7b-32x2K -w accuracy-2x1K -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla 2>&1 | tail -40
rm -f "$OUT/bench.png"
