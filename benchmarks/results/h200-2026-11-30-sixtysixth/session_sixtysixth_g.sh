#!/usr/bin/env bash
# Sixty-sixth session, call 7 (about 150 s; carry .whl): the gated norm's backward (call 6's profile: 1263 us a launch
# against mamba_ssm's 810 at 8x4K, 5120 wide with z): a sweep of the two-sweep kernel's blocks beside mamba_ssm's.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
timeout 240 python3 benchmarks/tune_rmsnorm_bwd.py > "$OUT/tune-norm-bwd.txt" 2>&1
echo "== tune rc $?"; grep -v -i warn "$OUT/tune-norm-bwd.txt" | tail -40
