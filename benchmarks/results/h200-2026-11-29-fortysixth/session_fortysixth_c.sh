#!/usr/bin/env bash
# Forty-sixth session, call 3: the forty-fifth session's next_session_a.sh 1 under this session's rules (the backward's
# segments, `_backward_segment`; the forward's four lanes where they fill most of a wave, FWD_SEGMENTS_FILL): the
# whole selective-scan test file on the GPU while mamba_ssm's CUDA scan builds, then the Mamba-1 bench at batch 1
# and 8 beside mamba_ssm in the same run. Needs mamba_ssm's sdist and wheel in .whl/, carried (shared/ANCHORS.md);
# without them the build fails and the bench prints mamba_ssm as unavailable.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
(timeout 280 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/c/build.txt" 2>&1; \
  echo "build exit $?" >> "$OUT/c/build.txt") &
timeout 290 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_selective_scan.py > "$OUT/c/tests-full.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/c/tests-full.txt" | tail -12 | tee "$OUT/c/tests.txt"
wait; tail -2 "$OUT/c/build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then export PYTHONPATH=/tmp/sscuda:$PYTHONPATH; fi
timeout 280 python3 -m flashssm bench -w m1-2.8b-1x32K -w m1-130m-1x32K -w m1train-2.8b-1x32K -w m1train-130m-1x8K \
  -w m1-2.8b-8x2K -w m1train-2.8b-8x2K -i flashssm -i mamba_ssm 2>&1 | grep -v -i warn | tee "$OUT/c/bench-m1.txt"
