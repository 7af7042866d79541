#!/usr/bin/env bash
# Fiftieth session, call 1: the host path of small SSD calls. (1) ab_host_path.py: Triton's runner for every direct
# launch (runner), the compiled kernel's launcher called directly (launcher), and prepared calls (prepared: a repeated
# signature replays its allocations and launches), alternating in one process, forward and training at 1x2K and 1x8K;
# (2) host_overhead.py's profile of the 1x2K forward now; (3) the bench's 1x2K and 1x8K rows beside mamba_ssm, twice;
# (4) the new tests and the SSD forward file on the GPU (every repeated no-grad call there now replays).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 150 python3 benchmarks/ab_host_path.py --workload 1x2K --workload 1x8K --rounds 5 --calls 300 \
  > "$OUT/a/ab-host.txt" 2>&1
cat "$OUT/a/ab-host.txt"
timeout 60 python3 benchmarks/host_overhead.py -w 2.7b-1x2K --profile 300 > "$OUT/a/host.txt" 2>&1
head -3 "$OUT/a/host.txt"
for i in 1 2; do
  timeout 80 python3 -m flashssm bench -w 2.7b-1x2K -w 2.7b-1x8K -i flashssm -i mamba_ssm 2>&1 \
    | grep -v -i warn | tee -a "$OUT/a/bench.txt" | grep -E "^flashssm |^mamba_ssm |^2.7b"
done
timeout 60 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short \
  tests/test_prepared.py tests/test_launch.py > "$OUT/a/tests-prepared.txt" 2>&1
echo "pytest rc $?"; tail -3 "$OUT/a/tests-prepared.txt"
timeout 230 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 10 \
  tests/ops/test_ssd_forward.py > "$OUT/a/tests-ssd-forward.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-ssd-forward.txt" | tail -8
