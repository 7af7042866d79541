#!/usr/bin/env bash
# Thirty-first session, call 8 (H100, carry .whl): the early form's spans up to 8192 tokens (MAX_GROUP_TOKENS_EARLY):
# the Gluon GPU tests (a case with spans of 32 chunks), the A/B at the package's new span against 8 and 16 chunks
# for both kernels, the 1M-token check against float64 (spans of 32 chunks there too), and the bench at 1x32K and
# 1x128K with the peers.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m gpu tests/ops/test_ssd_forward.py -k gluon \
  > "$OUT/call8-tests-gluon.txt" 2>&1
tail -2 "$OUT/call8-tests-gluon.txt"
timeout 200 python3 benchmarks/ab_gluon_forward.py --groups 8,16 --triton-groups --workload 2.7b-1x128K \
  --workload 2.7b-1x32K 2>&1 | grep -v Warn | tee "$OUT/call8-ab.txt"
timeout 150 python3 benchmarks/check_huge.py ssd-fwd --ssd-fwd-tokens 1048576 2>&1 | grep -v Warn | tail -5 \
  | tee "$OUT/call8-check1m.txt"
timeout 150 python3 -m flashssm bench --json "$OUT/call8-bench.json" -w 2.7b-1x32K -w 2.7b-1x128K \
  -i flashssm -i mamba_ssm -i fla > "$OUT/call8-bench.txt" 2>&1
grep -E "^device|^ceil|^2.7b|^flashssm |^mamba|^fla " "$OUT/call8-bench.txt"
