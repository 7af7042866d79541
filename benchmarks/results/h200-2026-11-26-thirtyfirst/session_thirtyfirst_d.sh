#!/usr/bin/env bash
# Thirty-first session, call 4 (carry .whl): the SSD forward bench with the peers in one run, then the SSD forward
# test file on the GPU (every mark).
set -uo pipefail
OUT=${OUT:-out}
bash benchmarks/gpu_run.sh bench -- -w 2.7b-1x8K -w 2.7b-1x2K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K -w 2.7b-32x2K \
  -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla > "$OUT/call4-bench-log.txt" 2>&1
for f in bench.txt bench.json bench.png; do [ -f "$OUT/$f" ] && mv "$OUT/$f" "$OUT/call4-$f"; done
tail -30 "$OUT/call4-bench.txt"
export PYTHONPATH=$PWD
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py \
  > "$OUT/call4-tests-fwd.txt" 2>&1
tail -4 "$OUT/call4-tests-fwd.txt"
