#!/usr/bin/env bash
# Ready for the next session: what the forty-sixth session's device time did not reach. One call:
#   the whole selective-scan test file on the GPU under the final backward rule (the session's call 3 ran it under the
#   first one: segments of 512; the final rule takes 128-256 for short sequences, and test_gpu_segments_through_the_
#   public_path's 9000 tokens at dim 256 now run in 128-token segments), with -n 8 and 330 s (call 3's 290 s were cut
#   by cold compiles: three tests unfinished); then the training bench beside mamba_ssm at batch 1, 2 and 8.
# Needs mamba_ssm's sdist and wheel in .whl/, carried (shared/ANCHORS.md).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
(timeout 280 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/a/build.txt" 2>&1; \
  echo "build exit $?" >> "$OUT/a/build.txt") &
timeout 330 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_selective_scan.py > "$OUT/a/tests-full.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-full.txt" | tail -12 | tee "$OUT/a/tests.txt"
wait; tail -2 "$OUT/a/build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then export PYTHONPATH=/tmp/sscuda:$PYTHONPATH; fi
timeout 240 python3 -m flashssm bench -w m1train-2.8b-1x32K -w m1train-2.8b-2x16K -w m1train-2.8b-8x2K \
  -w m1train-130m-1x8K -i flashssm -i mamba_ssm 2>&1 | grep -v -i warn | tee "$OUT/a/bench-m1.txt"
