#!/usr/bin/env bash
# Twenty-second session, eighth GPU call: the final code (0eb2409: 16-bit B/C tiles in the forward above dstate 16
# and with the stored states): the GPU selective-scan tests while mamba_ssm's CUDA scan builds, then the Mamba-1 bench
# (forwards and training) with it in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
(timeout 300 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/call8-build.txt" 2>&1; \
  echo "build exit $?" >> "$OUT/call8-build.txt") &
timeout 290 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py \
  > "$OUT/call8-tests-scan.txt" 2>&1
echo "tests: exit $?"; tail -2 "$OUT/call8-tests-scan.txt"
wait; tail -2 "$OUT/call8-build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then
  export PYTHONPATH=/tmp/sscuda:$PYTHONPATH
  timeout 270 python3 -m flashssm bench -w m1-n128-8x2K -w m1-2.8b-8x2K -w m1train-2.8b-8x2K \
    -w m1train-n128-1x1K -i flashssm -i mamba_ssm 2>&1 | grep -v Warn | tee "$OUT/call8-bench-m1.txt" \
    | grep -E "^m1|^flashssm|^mamba"
fi
