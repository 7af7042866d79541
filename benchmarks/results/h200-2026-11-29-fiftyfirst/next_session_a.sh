#!/usr/bin/env bash
# Ready for the next session (about 450 s, two calls' worth if the machine is slow): the GPU files the fifty-first
# session's last changes reach and that it did not run on the GPU after them: the models (their prefill's
# causal_conv1d, selective_scan and rmsnorm_gated calls now replay), conv1d, norm, dispatch, the selective scan's
# file, and the SSD forward file (ssd_scan's key now from _runtime.call_signature); then the fuzzer over the three ops
# whose calls replay since (each case checks a repeated call's bits where it does).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 10 \
  tests/models tests/ops/test_conv1d.py tests/ops/test_norm.py tests/ops/test_dispatch.py tests/test_compile_ahead.py \
  tests/ops/test_selective_scan.py > "$OUT/a/tests-models-ops.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-models-ops.txt" | tail -8
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 10 \
  tests/ops/test_ssd_forward.py > "$OUT/a/tests-ssd-forward.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-ssd-forward.txt" | tail -8
