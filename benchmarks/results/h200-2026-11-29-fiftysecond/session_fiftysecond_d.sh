#!/usr/bin/env bash
# Fifty-second session, call 4 (about 520 s): selective_scan's backward now takes the last state's gradient in any
# layout (expanded ones were read out of bounds). (1) Its new test and the scan's gradient tests on the GPU; (2) every
# op's gradients with incoming gradients contiguous, transposed in memory and expanded, at real shapes, deterministic
# (bits) and with atomics (benchmarks/check_incoming_layouts.py); (3) the fuzzer, whose incoming gradients now take a
# random layout, over the ops with gradients.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/d"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 12 \
  tests/ops/test_selective_scan.py -k "noncontiguous or only_requested or every_option or deterministic" \
  > "$OUT/d/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/d/tests.txt" | tail -8
timeout 300 python3 benchmarks/check_incoming_layouts.py > "$OUT/d/layouts.txt" 2>&1
echo "layouts rc $?"; cat "$OUT/d/layouts.txt" | tail -30
timeout 80 python3 -m tests.fuzz.fuzz --seed 55 --budget 60 --ops ssd_scan,selective_scan,causal_conv1d,rmsnorm_gated \
  > "$OUT/d/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -4 "$OUT/d/fuzz.txt" | cut -c1-600
