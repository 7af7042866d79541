#!/usr/bin/env bash
# Seventieth session, call 2 (one H200, ~360 s): the Gluon sweep launched by PDL (`forward_gluon.PDL`), off by
# default. Its GPU test (the same bits as without, call after call with alternating inputs), then A/B timings of the
# forward (do_bench and each kernel's profiler time) and of the training call, alternating in one process.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt"
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -m gpu \
  tests/ops/test_ssd_forward.py -k "pdl" > "$OUT/tests-pdl.txt" 2>&1
tail -3 "$OUT/tests-pdl.txt"
export PYTHONPATH=.
timeout 200 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.PDL --rounds 7 --kernels \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-1x2K --workload 2.7b-1x32K --workload 2.7b-1x128K \
  --workload 2.7b-8x4K-layer > "$OUT/ab-pdl-forward.txt" 2>&1
grep -v "0.0000,\|Warning\|warn_once" "$OUT/ab-pdl-forward.txt"
timeout 120 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.forward_gluon.PDL --rounds 5 \
  --workload 8x4K --workload 1x32K > "$OUT/ab-pdl-train.txt" 2>&1
tail -8 "$OUT/ab-pdl-train.txt"
