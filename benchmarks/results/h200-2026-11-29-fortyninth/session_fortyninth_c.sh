#!/usr/bin/env bash
# Forty-ninth session, call 3: (1) the exit with the fix (_runtime._finish_compiles at exit; call 2 without it: the SSD
# training forward's scripts aborted, status -6), and the control with compile-ahead off; (2) GPU tests of the files
# that compile-ahead touches and that did not run on the GPU since it landed: models, conv1d, launch, compile-ahead.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/exit_while_compiling.py train-2.7b-8x4K:return train-2.7b-8x4K:return \
  train-2.7b-8x4K:exit m1train-2.8b-8x2K:raise m1train-2.8b-packed-8x2K:return 2>&1 | tee "$OUT/c/exit.txt"
FLASHSSM_COMPILE_AHEAD=0 timeout 60 python3 benchmarks/exit_while_compiling.py train-2.7b-8x4K:return 2>&1 \
  | sed 's/^/ahead off: /' | tee -a "$OUT/c/exit.txt"
timeout 300 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/models tests/ops/test_conv1d.py tests/test_launch.py tests/test_compile_ahead.py > "$OUT/c/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed|Error" "$OUT/c/tests.txt" | tail -12
