#!/usr/bin/env bash
# Forty-ninth session, call 4: (1) the 1x2K SSD forward (issue 3 asks 6x mamba_ssm; the last H200 bench had 5.93x):
# host or GPU bound, and where the host's time goes (host_overhead.py with cProfile); the bench's row beside mamba_ssm
# twice. (2) The SSD backward's test file on the GPU with compile-ahead on (not run whole since it landed).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/d"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 120 python3 benchmarks/host_overhead.py -w 2.7b-1x2K -w 2.7b-1x8K --profile 300 > "$OUT/d/host.txt" 2>&1
head -4 "$OUT/d/host.txt"
for i in 1 2; do
  timeout 100 python3 -m flashssm bench -w 2.7b-1x2K -i flashssm -i flashssm-fp16-states -i mamba_ssm 2>&1 \
    | grep -v -i warn | tee -a "$OUT/d/bench-1x2K.txt" | tail -6
done
timeout 300 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_ssd_backward.py > "$OUT/d/tests-full.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/d/tests-full.txt" | tail -12 | tee "$OUT/d/tests.txt"
