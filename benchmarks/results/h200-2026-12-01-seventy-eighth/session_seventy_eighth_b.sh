#!/usr/bin/env bash
# Seventy-eighth session, call 2: the late form's dt values computed in the sweep (forward_gluon.INLINE_DECAYS: each
# stage's dt loaded as given an iteration ahead, processed and scanned by every warp after the next C.B^T is issued;
# no preparation launch): the time of the call and the kernel on the late workloads, then the GPU tests with it on,
# and y's error.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > "$OUT/gpu.txt"
timeout 260 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.INLINE_DECAYS --value False --value True \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --workload 2.7b-8x4K-fp16 \
  --rounds 7 --kernels > "$OUT/ab-inline.txt" 2>&1
timeout 60 python3 benchmarks/ab_forward_accuracy.py flashssm.ops.ssd.forward_gluon.INLINE_DECAYS --value False \
  --value True --workload 2.7b-8x4K --workload 2.7b-8x4K-layer --seeds 2 > "$OUT/acc-inline.txt" 2>&1
timeout 200 python3 - > "$OUT/tests-inline.txt" 2>&1 <<'PY'
import sys
import pytest
import flashssm.ops.ssd.forward_gluon as g
g.INLINE_DECAYS = True
sys.exit(pytest.main(["-q", "-x", "-m", "gpu", "-p", "no:cacheprovider", "-o", "addopts=", "tests/ops/test_ssd_forward.py",
                      "-k", "(gluon_forward and late and not fp16 and not float16) or gluon_public_path "
                            "or (gluon_tma_same_bits and not early)"]))
PY
echo "tests rc $?" >> "$OUT/tests-inline.txt"
tail -3 "$OUT"/tests-inline.txt; cat "$OUT"/acc-inline.txt | grep -v Warn; grep -v "Warn\|warn" "$OUT"/ab-inline.txt | tail -24
