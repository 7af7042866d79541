#!/usr/bin/env bash
# Twenty-fourth session, call 5: the deterministic mode's 8x4K figure (call 4: 4.863 ms and 920 MiB where the
# nineteenth session had 4.366 and 1266 on the same form) alone and in both orders; backward alone in one process;
# the failing seed's test replayed with the edges moved off the tokens; the SSD backward GPU tests.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
for impls in "-i flashssm-deterministic" "-i flashssm-deterministic -i flashssm -i mamba_ssm" \
             "-i flashssm -i flashssm-deterministic"; do
  echo "== $impls"
  timeout 120 python3 -m flashssm bench -w train-2.7b-8x4K $impls 2>&1 | grep -E "^flashssm|^mamba"
done | tee "$OUT/call5-bench-det.txt"
timeout 150 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096 --opts none --memory \
  --variants tiles:k256,tiles,tiles:det,tiles:det:k128 2>&1 | grep -v Warn | tee "$OUT/call5-ab-det.txt"
FLASHSSM_TEST_SEED=360355933 timeout 100 python3 -m pytest -p no:cacheprovider -q tests/ops/test_ssd_backward.py \
  -k "test_gradients_match_reference and L257" 2>&1 | tee "$OUT/call5-tests-replay.txt" | grep -E "^FAILED|passed|failed"
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call5-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
