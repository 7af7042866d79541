#!/usr/bin/env bash
# Thirty-sixth session, call 11 (H100): call 10's one failing test (test_every_option[Dhp-z0-bias1-sp0-lim0-init0], dA
# 1.08e-2 against 8e-3, seed 989523223) replayed with the tiles' prefetch on and off, and over ten other seeds.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
T="tests/ops/test_ssd_backward.py::test_every_option[Dhp-z0-bias1-sp0-lim0-init0]"
for pf in True False; do
  sed -i "s/^TILES_PREFETCH = .*/TILES_PREFETCH = $pf/" flashssm/ops/ssd/backward_tiles.py
  FLASHSSM_TEST_SEED=989523223 timeout 60 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -s "$T" 2>&1 \
    | grep -E "dA|passed|failed" | sed "s/^/prefetch $pf: /" | tee -a "$OUT/call11-replay.txt"
done
for seed in 1 2 3 4 5 6 7 8 9 10; do
  FLASHSSM_TEST_SEED=$seed timeout 60 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -s "$T" 2>&1 \
    | grep -E "dA |passed|failed" | sed "s/^/seed $seed: /" | tee -a "$OUT/call11-replay.txt"
done
