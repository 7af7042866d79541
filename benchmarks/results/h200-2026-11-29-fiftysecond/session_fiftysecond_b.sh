#!/usr/bin/env bash
# Fifty-second session, call 2: call 1's first pytest run reached its 240 s limit at 96 % with two failures and no
# names (-q); the same files again with -v and a longer limit, on the warm machine (its Triton cache filled).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $OUT/b
timeout 330 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 12 tests/models \
  tests/ops/test_conv1d.py tests/ops/test_norm.py tests/ops/test_dispatch.py tests/test_compile_ahead.py \
  tests/test_prepared.py tests/ops/test_selective_scan.py > $OUT/b/tests-v.txt 2>&1
echo rc $?; grep -E "FAILED|ERROR" $OUT/b/tests-v.txt | head -20; tail -3 $OUT/b/tests-v.txt
