#!/usr/bin/env bash
# Eighty-first session, call 3: the rest of call 2's table (its 200 s limit cut the 1 x 32K training row): mamba_ssm's
# CUDA selective scan built again (a fresh machine), then the 1 x 32K training row and the 130M width's rows
# beside it in the same run, as the forty-sixth session's table has them.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  > "$OUT/pip.txt" 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
timeout 240 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/build.txt" 2>&1
echo "build rc $?" >> "$OUT/build.txt"
tail -2 "$OUT/build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then export PYTHONPATH=/tmp/sscuda:$PYTHONPATH; fi
for wl in m1train-2.8b-1x32K:220 m1-130m-1x32K:70 m1train-130m-1x8K:90; do
  w=${wl%:*}
  timeout ${wl#*:} python3 -m flashssm bench -w $w -i flashssm -i mamba_ssm --json "$OUT/bench-$w.json" \
    > "$OUT/bench-$w.txt" 2>&1
  echo "bench rc $?" >> "$OUT/bench-$w.txt"
  tail -6 "$OUT/bench-$w.txt"
done
