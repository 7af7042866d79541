#!/usr/bin/env bash
# Thirty-seventh session, call 6: the tiles kernel in Gluon, second form (S^T from L2 and x by plain loads: 100 KB of shared memory, two programs an SM) (backward_gluon.py; a program per chunk row and block of
# heads, the chunk row's S^T and B in shared memory once, each head's x, dy, dH, dt and cs by cp.async a head ahead):
# its GPU test and the tiles tests with it on, then A/B against the Triton tiles kernel (training calls).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 150 python3 -m pytest -p no:cacheprovider -x -o addopts="-ra" tests/ops/test_ssd_backward.py -k "gluon_tiles_kernel" \
  > "$OUT/call6-test-gluon.txt" 2>&1
tail -15 "$OUT/call6-test-gluon.txt"
if grep -q " passed" "$OUT/call6-test-gluon.txt" && ! grep -q "failed" "$OUT/call6-test-gluon.txt"; then
  timeout 150 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_gluon.ENABLED --value False --value True \
    --workload 8x4K --workload 32x2K --rounds 5 --kernel _tiles_kernel --kernel _tiles_gluon_kernel \
    > "$OUT/call6-ab-gluon.txt" 2>&1
  grep -v -i warn "$OUT/call6-ab-gluon.txt"
  grep -A0 "True: call" "$OUT/call6-ab-gluon.txt" | head -1 | grep -q "(-" && timeout 200 python3 -m pytest -p no:cacheprovider -n 8 -o addopts="-ra" tests/ops/test_ssd_backward.py -k "tiles or gluon" \
    > "$OUT/call6-tests.txt" 2>&1
  tail -4 "$OUT/call6-tests.txt"
fi
