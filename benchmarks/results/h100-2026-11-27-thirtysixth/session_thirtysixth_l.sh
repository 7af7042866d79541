#!/usr/bin/env bash
# Thirty-sixth session, calls 12-13 (H100), as run (one-line commands): call 12 replayed call 10's failing draw
# (repro_every_option.py, seeds 989523223 and 6: dA per head against float64 and its cancelling size, sweeps and
# tiles); call 13 replayed the test with check_gradients' cancelling fallback, then the every-option, reference and
# chunk-size tests of the SSD backward file on the GPU.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD
python3 benchmarks/results/h100-2026-11-27-thirtysixth/repro_every_option.py | tee "$OUT/call12-repro.txt"
python3 benchmarks/results/h100-2026-11-27-thirtysixth/repro_every_option.py 6 | tee -a "$OUT/call12-repro.txt"
FLASHSSM_TEST_SEED=989523223 timeout 100 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -s \
  "tests/ops/test_ssd_backward.py::test_every_option[Dhp-z0-bias1-sp0-lim0-init0]" 2>&1 | grep -E "dA|passed|failed" \
  | tee "$OUT/call13-replay.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "every_option or gradients_match or chunk_sizes" 2>&1 | tail -2 | tee -a "$OUT/call13-replay.txt"
