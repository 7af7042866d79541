#!/usr/bin/env bash
# Fiftieth session, call 3: the training forward replayed too (a call with gradients whose signature an earlier one
# recorded replays its forward's launches inside SSDScanFunction). (1) ab_host_path.py, launcher alone against
# launcher + prepared, forward and training at 1x2K and 1x8K; (2) a cProfile of the 1x2K training call (what is left);
# (3) the SSD backward file (its repeated training signatures now replay their forwards) beside test_prepared and the
# models file; (4) the bench's training 1x2K row beside mamba_ssm, twice.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/ab_host_path.py --workload 1x2K --workload 1x8K --rounds 5 --calls 200 \
  --setting "launcher=flashssm._runtime.PREPARED=False" --setting "prepared=flashssm._runtime.PREPARED=True" \
  > "$OUT/c/ab-host.txt" 2>&1
cat "$OUT/c/ab-host.txt"
timeout 60 python3 benchmarks/host_overhead.py -w train-2.7b-1x2K --profile 200 > "$OUT/c/host-train.txt" 2>&1
head -3 "$OUT/c/host-train.txt"
timeout 250 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_ssd_backward.py > "$OUT/c/tests-ssd-backward.txt" 2>&1 &
timeout 250 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 6 \
  tests/test_prepared.py tests/models > "$OUT/c/tests-others.txt" 2>&1 &
wait
for f in "$OUT"/c/tests-*.txt; do echo "$f"; grep -E "FAILED|ERROR|passed|failed" "$f" | tail -8; done
for i in 1 2; do
  timeout 60 python3 -m flashssm bench -w train-2.7b-1x2K -i flashssm -i mamba_ssm 2>&1 | grep -v -i warn \
    | tee -a "$OUT/c/bench-train.txt" | grep -E "^flashssm |^mamba_ssm "
done
