#!/usr/bin/env bash
# Fifty-first session, call 2: the training backward replayed (a recorded training call's backward replays its
# allocations, launches and torch calls). (1) ab_host_path.py: the backward's replay off and on, forward and training
# at 1x2K and 1x8K, without and with D, dt_bias and softplus; (2) the host profile of the 1x2K training call (what is
# left); (3) test_prepared + test_launch, and the SSD backward file (its repeated signatures replay their backwards),
# beside a two-minute ssd_scan fuzz (each training case now also checks the replayed backward's bits); (4) the bench's
# training rows beside mamba_ssm.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
S="--setting forward-only=flashssm.ops.ssd.autograd.PREPARED_BACKWARD=False"
S="$S --setting backward=flashssm.ops.ssd.autograd.PREPARED_BACKWARD=True"
timeout 100 python3 benchmarks/ab_host_path.py --workload 1x2K --workload 1x8K --rounds 5 --calls 200 $S \
  > "$OUT/b/ab-host.txt" 2>&1
cat "$OUT/b/ab-host.txt"
timeout 80 python3 benchmarks/ab_host_path.py --workload 1x2K --workload 1x8K --rounds 5 --calls 200 --options $S \
  > "$OUT/b/ab-host-options.txt" 2>&1
cat "$OUT/b/ab-host-options.txt"
timeout 40 python3 benchmarks/host_overhead.py -w train-2.7b-1x2K --profile 200 > "$OUT/b/host-train.txt" 2>&1
head -3 "$OUT/b/host-train.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_ssd_backward.py > "$OUT/b/tests-ssd-backward.txt" 2>&1 &
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 3 \
  tests/test_prepared.py tests/test_launch.py > "$OUT/b/tests-prepared.txt" 2>&1 &
timeout 150 python3 -m tests.fuzz.fuzz --seed 51 --budget 120 --ops ssd_scan > "$OUT/b/fuzz.txt" 2>&1 &
wait
for f in "$OUT"/b/tests-*.txt "$OUT"/b/fuzz.txt; do echo "$f"; grep -E "FAILED|ERROR|passed|failed|cases" "$f" | tail -8; done
timeout 120 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i mamba_ssm 2>&1 | grep -v -i warn > "$OUT/b/bench-train.txt"
grep -E "^flashssm |^mamba_ssm |^train" "$OUT/b/bench-train.txt"
