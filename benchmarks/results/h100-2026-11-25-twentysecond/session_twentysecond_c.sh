#!/usr/bin/env bash
# Twenty-second session, third GPU call: call 2's bench again, with the peers' wheels carried this time.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/call3-build.txt" 2>&1
echo "build exit $?"; tail -1 "$OUT/call3-build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then
  export PYTHONPATH=/tmp/sscuda:$PYTHONPATH
  timeout 270 python3 -m flashssm bench -w m1train-130m-1x8K -w m1train-2.8b-8x2K \
    -w m1train-n128-1x1K -i flashssm -i mamba_ssm 2>&1 | grep -v Warn | tee "$OUT/call3-bench-m1.txt" \
    | grep -E "^m1|^flashssm|^mamba"
fi
