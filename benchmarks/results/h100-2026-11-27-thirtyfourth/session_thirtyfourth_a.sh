#!/usr/bin/env bash
# Thirty-fourth session, call 1 (H100): the forward stores the tiles backward's states as its output sweep runs
# (backward_chain.tiles_states). (1) The new tests on the GPU (the Triton and Gluon kernels' stored states, the
# training path taking them), then the SSD backward file and the forward file's Gluon tests with the change in
# (every tiles-form test there without z now takes the stored states: call 2); (2) the A/B of the training call.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 170 python3 benchmarks/ab_train_states.py --workload 8x4K --workload 1x32K --workload 32x2K --rounds 5 \
  2>&1 | grep -v Warn | tee "$OUT/call1-ab.txt"
timeout 90 python3 benchmarks/ab_train_states.py --workload 8x4K --workload 1x32K --rounds 3 --options \
  2>&1 | grep -v Warn | tee "$OUT/call1-ab-options.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  -k "sweep_states or gluon" > "$OUT/call1-tests-fwd.txt" 2>&1
tail -4 "$OUT/call1-tests-fwd.txt"
