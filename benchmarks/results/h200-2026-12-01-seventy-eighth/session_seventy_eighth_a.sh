#!/usr/bin/env bash
# Seventy-eighth session, call 1: the Gluon forward's in-chunk product m x as one tf32 product (forward_gluon.M_TF32:
# m in fp32 registers, its columns permuted so that the accumulator's registers are tf32's A fragment; x^T widened to
# fp32 in the C rows' stage, read by then) against m's two 16-bit parts: the GPU tests with it on, y's error, and the
# time of the kernel on the issue's workloads.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > "$OUT/gpu.txt"
timeout 170 python3 - > "$OUT/tests-tf32.txt" 2>&1 <<'PY'
import sys
import pytest
import flashssm.ops.ssd.forward_gluon as g
g.M_TF32 = True
sys.exit(pytest.main(["-q", "-x", "-m", "gpu", "-p", "no:cacheprovider", "-o", "addopts=", "tests/ops/test_ssd_forward.py",
                      "-k", "(gluon_forward and not fp16 and not float16) or gluon_tma_same_bits or gluon_sweep_states "
                            "or gluon_packed or gluon_public_path"]))
PY
echo "tests rc $?" >> "$OUT/tests-tf32.txt"
timeout 100 python3 benchmarks/ab_forward_accuracy.py flashssm.ops.ssd.forward_gluon.M_TF32 --value False --value True \
  --workload accuracy-2x1K --workload 2.7b-1x2K --workload 2.7b-8x4K > "$OUT/acc-tf32.txt" 2>&1
timeout 280 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.M_TF32 --value False --value True \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --workload 2.7b-1x32K --workload 2.7b-1x128K \
  --rounds 5 --kernels > "$OUT/ab-tf32.txt" 2>&1
tail -4 "$OUT"/tests-tf32.txt; cat "$OUT"/acc-tf32.txt | tail -20; tail -30 "$OUT"/ab-tf32.txt
