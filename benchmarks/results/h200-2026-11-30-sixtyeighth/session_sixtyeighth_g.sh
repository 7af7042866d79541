#!/usr/bin/env bash
# Sixty-eighth session, call 7: TMA on for the training forward (the launches that store the states), now through
# `_runtime.launch` (descriptors keyed by their specialisation) and prepared calls (descriptors rebuilt over the
# replay's tensors). (1) GPU tests: the TMA tests, the prepared calls (a new one: a TMA training call replayed), the
# backward's layer call and stored-states tests; (2) the training call 8 x 4K, TMA False / True, alternating.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short \
  -n 14 tests/ops/test_ssd_forward.py::test_gpu_gluon_tma_same_bits tests/test_prepared.py tests/test_launch.py \
  "tests/ops/test_ssd_backward.py::test_gpu_layer_call" "tests/ops/test_ssd_backward.py::test_tiles_states_from_forward" \
  > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.txt" | tail -10)
export PYTHONPATH=$PWD
timeout 90 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.forward_gluon.TMA --workload 8x4K --rounds 3 \
  --kernel _ssd_fwd_gluon_kernel > "$OUT/ab-train.txt" 2>&1
echo "== ab train rc $?"; grep -v -i warn "$OUT/ab-train.txt" | tail -8
