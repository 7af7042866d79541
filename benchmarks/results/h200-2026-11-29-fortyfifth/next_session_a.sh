#!/usr/bin/env bash
# Ready for the next session: what the forty-fifth session's device time did not reach. Two calls:
#   bash next_session_a.sh 1  : the GPU selective-scan tests under the new early-segment rule (call 8 ran only the dense
#                               half of test_gpu_segments_through_the_public_path), while mamba_ssm's CUDA scan builds;
#                               then the Mamba-1 bench at batch 1 with mamba_ssm in the same run (the rule's effect
#                               through `flashssm bench`).
#   bash next_session_a.sh 2  : the backward's segments, which still follow the rounds model (_segment_for) that the
#                               forward's measurements overturned: shorter segments at batch 1, segments at batch 2
#                               (1280 one-warp programs, 1.2 waves at 255 registers: none today), 4x8K.
# Part 1 needs mamba_ssm's sdist and wheel in .whl/, carried (shared/ANCHORS.md; notes/selective_scan.md, nineteenth
# session): without them the build fails and the bench prints mamba_ssm as unavailable.
set -uo pipefail
OUT=${OUT:-out}
PART=${1:-1}
mkdir -p "$OUT/a"
if [ "$PART" = 1 ]; then
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
(timeout 280 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/a/build.txt" 2>&1; \
  echo "build exit $?" >> "$OUT/a/build.txt") &
timeout 290 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_selective_scan.py > "$OUT/a/tests-full.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-full.txt" | tail -12 | tee "$OUT/a/tests.txt"
wait; tail -2 "$OUT/a/build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then export PYTHONPATH=/tmp/sscuda:$PYTHONPATH; fi
timeout 280 python3 -m flashssm bench -w m1-2.8b-1x32K -w m1-130m-1x32K -w m1train-2.8b-1x32K -w m1train-130m-1x8K \
  -w m1-2.8b-8x2K -i flashssm -i mamba_ssm 2>&1 | grep -v -i warn | tee "$OUT/a/bench-m1.txt"
else
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 560 python3 benchmarks/tune_scan_segments.py --backward \
  1x32768x5120:4,256 1x32768x5120:4,512 1x32768x5120:4,1024 1x32768x5120:4,2048 \
  2x16384x5120:4,512 2x16384x5120:4,1024 2x16384x5120:4,2048 4x8192x5120:4,512 4x8192x5120:4,1024 \
  1x8192x1536:4,256 1x8192x1536:4,512 2>&1 | grep -v -i warn | tee "$OUT/a/tune-bwd-segments.txt"
fi
