#!/usr/bin/env bash
# Thirty-third session, call 6 (carry .whl): the direct launch now fills a constexpr left to its default (the Gluon
# forward's OWN3 had kept that kernel on Triton's own launch, every call). (1) The launch tests and the Gluon tests
# that launch repeatedly; (2) which kernels still take Triton's launch; (3) host_overhead at 1x2K, forward and
# training; (4) the bench at 1x2K with the peers, three times.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONUNBUFFERED=1
timeout 200 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/test_launch.py \
  tests/ops/test_ssd_forward.py -k "launch or run_time_span or public_path or G32" 2>&1 | tail -3 \
  | tee "$OUT/call6-tests.txt"
timeout 120 env PYTHONPATH=$PWD python3 benchmarks/launch_paths.py 2>&1 | grep -v Warn | tee "$OUT/call6-paths.txt"
timeout 120 env PYTHONPATH=$PWD python3 benchmarks/host_overhead.py -w 2.7b-1x2K -w train-2.7b-1x2K 2>&1 \
  | grep -v Warn | tee "$OUT/call6-host.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
timeout 150 python3 -m flashssm bench --json "$OUT/call6-bench.json" -w 2.7b-1x2K -w 2.7b-1x2K -w 2.7b-1x2K \
  -w train-2.7b-1x2K -i flashssm -i mamba_ssm -i fla > "$OUT/call6-bench.txt" 2>&1
grep -E "^device|^2.7b|^train|^flashssm |^mamba|^fla " "$OUT/call6-bench.txt"
