#!/usr/bin/env bash
# Thirty-seventh session, call 5: the tiles kernel in Gluon (backward_gluon.py; a program per chunk row and block of
# heads, the chunk row's S^T and B in shared memory once, each head's x, dy, dH, dt and cs by cp.async a head ahead):
# its GPU test and the tiles tests with it on, then A/B against the Triton tiles kernel (training calls).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 150 python3 -m pytest -p no:cacheprovider -x -o addopts="-ra" tests/ops/test_ssd_backward.py -k "gluon_tiles_kernel" \
  > "$OUT/call5-test-gluon.txt" 2>&1
tail -15 "$OUT/call5-test-gluon.txt"
if grep -q " passed" "$OUT/call5-test-gluon.txt" && ! grep -q "failed" "$OUT/call5-test-gluon.txt"; then
  timeout 150 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_gluon.ENABLED --value False --value True \
    --workload 8x4K --workload 32x2K --rounds 5 --kernel _tiles_kernel --kernel _tiles_gluon_kernel \
    > "$OUT/call5-ab-gluon.txt" 2>&1
  grep -v -i warn "$OUT/call5-ab-gluon.txt"
  timeout 200 python3 -m pytest -p no:cacheprovider -n 8 -o addopts="-ra" tests/ops/test_ssd_backward.py -k "tiles or gluon" \
    > "$OUT/call5-tests.txt" 2>&1
  tail -4 "$OUT/call5-tests.txt"
fi
