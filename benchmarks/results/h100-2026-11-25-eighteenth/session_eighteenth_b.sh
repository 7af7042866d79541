#!/usr/bin/env bash
# Eighteenth session, second GPU call: the deterministic tiles after call 1 (the paths launch's slots summed into dB/dC
# before the pair launch's are allocated, n_blk + 1 pair-sum planes instead of 2 n_blk, the parallel form kept where
# the default mode takes the sweeps): GPU tests of the deterministic and tiles paths, the A/B of the forms, the bench.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  -k "deterministic or tiles or gpu_real" 2>&1 | tee "$OUT/call2-tests.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 120 python3 benchmarks/ab_deterministic.py --workloads 8x4096,1x32768 --rounds 3 2>&1 | grep -v Warn \
  | tee "$OUT/call2-ab-det.txt"
timeout 170 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i flashssm-deterministic -i mamba_ssm 2>&1 | tee "$OUT/call2-bench.txt" | grep -E "^train|^flashssm|^mamba"
