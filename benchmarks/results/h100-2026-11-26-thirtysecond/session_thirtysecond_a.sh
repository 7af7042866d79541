#!/usr/bin/env bash
# Thirty-second session, call 1 (H100): (1) the chain form's product modes' dA and dt_bias errors over draws of
# test_chain_product_modes' inputs (32 with the sweeps, 16 with the tiles), relative and in units of the cancelling
# terms, to bound the flaky ROUND-sweeps case from data; (2) that test on the GPU; (3) the Gluon forward's early
# publish at 1x128K in spans of other lengths than 32 chunks (groups not a power of two included).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv | tee "$OUT/call1-gpu.txt"
timeout 200 python3 benchmarks/probe_round_da.py 32 --launch sweeps 2>&1 | grep -v Warn | tee "$OUT/call1-probe-sweeps.txt"
timeout 100 python3 benchmarks/probe_round_da.py 16 --launch tiles 2>&1 | grep -v Warn | tee "$OUT/call1-probe-tiles.txt"
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/ops/test_ssd_backward.py -k "chain_product_modes" \
  2>&1 | tail -15 | tee "$OUT/call1-tests.txt"
timeout 170 python3 benchmarks/ab_gluon_forward.py --workload 2.7b-1x128K --groups 40,48,64 2>&1 | grep -v Warn \
  | tee "$OUT/call1-ab-groups.txt"
