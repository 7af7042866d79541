#!/usr/bin/env bash
# Ready for the next session (about 330 s): the SSD forward file, test_launch.py and test_prepared.py on the GPU after
# the review's refactor of the direct launch (_runtime._run_compiled, every launch) and test_prepared's last change
# (the reference-fallback case now resets the once-a-process warning set), and the differential fuzzer over ssd_scan
# for two minutes, bf16 included: each case now also calls ssd_scan twice without gradients and needs the replay's
# bits to be the whole path's (the GPU's direct replays on random shapes, strides and options).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 90 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short \
  tests/test_prepared.py tests/test_launch.py > "$OUT/a/tests-prepared.txt" 2>&1
echo "pytest rc $?"; tail -3 "$OUT/a/tests-prepared.txt"
timeout 150 python3 -m tests.fuzz.fuzz --seed 50 --budget 120 --ops ssd_scan > "$OUT/a/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -5 "$OUT/a/fuzz.txt"
timeout 240 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 10 \
  tests/ops/test_ssd_forward.py > "$OUT/a/tests-ssd-forward.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-ssd-forward.txt" | tail -8
