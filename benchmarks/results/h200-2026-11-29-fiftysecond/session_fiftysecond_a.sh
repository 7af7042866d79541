#!/usr/bin/env bash
# The fifty-first session's next_session_a.sh, run first (about 500 s): what the fifty-first session's last changes reach and did not run on the
# GPU after them. (1) The models (their prefill's causal_conv1d, selective_scan and rmsnorm_gated calls now replay),
# conv1d, norm, dispatch, compile-ahead, the selective scan's file and test_prepared (its new GPU test: a recorded or
# replayed backward's peak memory at most the whole path's, in sweeps and in tiles). (2) The SSD forward file
# (ssd_scan's key now from _runtime.call_signature). (3) The fuzzer over the four ops whose calls replay, a minute
# (each case checks a repeated call's bits).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 10 \
  tests/models tests/ops/test_conv1d.py tests/ops/test_norm.py tests/ops/test_dispatch.py tests/test_compile_ahead.py \
  tests/test_prepared.py tests/ops/test_selective_scan.py > "$OUT/a/tests-models-ops.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-models-ops.txt" | tail -8
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 10 \
  tests/ops/test_ssd_forward.py > "$OUT/a/tests-ssd-forward.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-ssd-forward.txt" | tail -8
timeout 80 python3 -m tests.fuzz.fuzz --seed 53 --budget 60 --ops ssd_scan,selective_scan,causal_conv1d,rmsnorm_gated \
  > "$OUT/a/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -3 "$OUT/a/fuzz.txt"
