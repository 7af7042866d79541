#!/usr/bin/env bash
# Prepared for the next session (not run): what the eightieth session left owed on the GPU.
# 1. The selective scan's whole GPU test file and test_prepared with SHARED_TOKENS_BWD on (its default since a25233c):
#    call 2 reached ~156 of ~160 cases in 360 s, none failed, and did not say which were left (call 3 ran 31 by name).
#    Here one file at a time, with the names of what ran, so that a limit leaves a list.
# 2. The Mamba-1 bench beside mamba_ssm's CUDA scan in the same run (the README's ratio is the forty-sixth session's,
#    before the seventy-ninth's forward and the eightieth's backward changes). Needs the sdist carried in .whl/
#    (benchmarks/build_mamba_selective_scan.py's docstring says how to fetch it); without it the bench runs flashssm
#    alone and says so.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -v -p no:cacheprovider -o addopts= -n 8 tests/ops/test_selective_scan.py \
  > "$OUT/tests-selective-scan.txt" 2>&1
echo "rc $?" >> "$OUT/tests-selective-scan.txt"
grep -cE "PASSED" "$OUT/tests-selective-scan.txt"; grep -E "FAILED|ERROR|rc " "$OUT/tests-selective-scan.txt" | tail -8
if [ -f .whl/mamba_ssm-2.3.2.post1.tar.gz ]; then
  timeout 200 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/build.txt" 2>&1
  tail -1 "$OUT/build.txt"
  if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then export PYTHONPATH=/tmp/sscuda:$PYTHONPATH; fi
fi
timeout 240 python3 -m flashssm bench -w m1-2.8b-8x2K -w m1train-2.8b-8x2K -w m1train-2.8b-1x32K -i flashssm \
  -i mamba_ssm > "$OUT/bench-m1.txt" 2>&1
tail -16 "$OUT/bench-m1.txt"
