#!/usr/bin/env bash
# Seventy-third session, call 3 (one H200). (1) GPU tests: activation checkpointing (tests/models/
# test_gradient_checkpointing.py, new), the saved-tensor hooks test in its final form, the recompute file, the model
# bench's test. (2) The 370m 8 x 2K training step: flashssm, its recompute and its activation checkpointing in one
# run (time, peak), twice in opposite orders (call 1 found one run of each in turn noisy).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/models/test_gradient_checkpointing.py tests/models/test_recompute.py \
  "tests/test_prepared.py::test_a_backward_under_saved_tensor_hooks_that_change_layouts" \
  tests/bench/test_bench.py -k "checkpointing or recompute or saved_tensor_hooks or model_bench" > "$OUT/tests.txt" 2>&1
timeout 150 python3 -m flashssm bench model -s train-370m-8x2K -i flashssm -i flashssm-recompute \
  -i flashssm-checkpointing --repeat 5 > "$OUT/bench-model-1.txt" 2>&1
timeout 150 python3 -m flashssm bench model -s train-370m-8x2K -i flashssm-checkpointing -i flashssm-recompute \
  -i flashssm --repeat 5 > "$OUT/bench-model-2.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head; tail -1 "$OUT/tests.txt"
grep -hE "train" "$OUT"/bench-model*.txt
