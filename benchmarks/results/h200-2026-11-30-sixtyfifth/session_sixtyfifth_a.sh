#!/usr/bin/env bash
# Sixty-fifth session, call 1 (about 560 s; carry .whl with the mamba_ssm and fla wheels as shared/ANCHORS.md says).
# 1. The chain launch's share of a per-head D's gradient as row sums (CHAIN_DD_ROWS: 0 the [SUB, headdim] accumulator
#    at steps of 64, 1 row sums at 64, 2 row sums at the wide step of 128), in one process, alternating, with D,
#    dt_bias and softplus (a Mamba-2 layer's call).
# 2. The layer workloads (owed by the sixty-fourth session: next_session_a.sh) beside mamba_ssm and fla.
# 3. GPU tests: the chain launch's row sums, every option of the backward, the bench's layer workloads.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/bench"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 170 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.CHAIN_DD_ROWS --value 0 --value 1 \
  --value 2 --options --rounds 3 --kernel _dstates_kernel --workload 8x4K --workload 1x32K > "$OUT/ab-dd-rows.txt" 2>&1
echo "== ab rc $?"; grep -v -i warn "$OUT/ab-dd-rows.txt" | tail -20 | cut -c1-220
timeout 200 python3 -m flashssm bench -w 2.7b-8x4K-layer -w train-2.7b-8x4K-layer -w train-2.7b-1x32K-layer \
  -i flashssm -i flashssm-deterministic -i mamba_ssm -i fla > "$OUT/bench/layer.txt" 2>&1
echo "== bench rc $?"; grep -v -i warn "$OUT/bench/layer.txt" | tail -24 | cut -c1-200
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
( cd /tmp/xrepo && timeout 170 python3 -m pytest -o addopts=-ra -p no:cacheprovider -q \
  tests/ops/test_ssd_backward.py -k "chain_dd_rows or every_option" > "$OUT/tests-bwd.txt" 2>&1; echo "rc $?" >> "$OUT/tests-bwd.txt" ) &
( cd /tmp/xrepo && timeout 170 python3 -m pytest -o addopts=-ra -p no:cacheprovider -q tests/bench/test_bench.py \
  -k layer > "$OUT/tests-bench.txt" 2>&1; echo "rc $?" >> "$OUT/tests-bench.txt" ) &
wait
echo "== tests"; tail -3 "$OUT/tests-bwd.txt"; tail -3 "$OUT/tests-bench.txt"
