#!/usr/bin/env bash
# Thirty-third session, call 2: (1) the one-wave spans at 1x2K and 1x8K timed from CUDA graphs (call 1's 1x2K figures
# were host-bound: the constexpr span took 0.079 ms, the same bits with a run-time span 0.123); (2) 1x32K and 1x128K
# again (medians of 9); (3) the new GPU tests (the preparation test now on the GPU's tensors).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/call2-gpu.txt"
timeout 200 python3 benchmarks/ab_gluon_forward.py --graph --rounds 7 --workload 2.7b-1x2K --workload 2.7b-1x8K \
  --groups 1,2,4 2>&1 | grep -v Warn | tee "$OUT/call2-ab-graph.txt"
timeout 240 python3 benchmarks/ab_gluon_forward.py --rounds 9 --workload 2.7b-1x32K --workload 2.7b-1x128K 2>&1 \
  | grep -v Warn | tee "$OUT/call2-ab.txt"
timeout 120 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/ops/test_ssd_forward.py \
  -k "run_time_span or public_path or one_wave or span_rule" 2>&1 | tail -4 | tee "$OUT/call2-tests.txt"
