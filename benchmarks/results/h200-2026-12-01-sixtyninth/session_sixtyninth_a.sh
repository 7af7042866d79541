#!/usr/bin/env bash
# The sixty-eighth session's prepared next_session_a.sh, run by the sixty-ninth as its first call. Two H200s (nvidia-h200-x2), ~420 s:
# the whole test suite once more with the TMA training forward on (`forward_gluon.TMA = True`, TMA_STATES; call 2 ran the
# whole suite before it; after it only the TMA, prepared, launch, late Gluon forward and the backward's layer-call and
# stored-states tests ran), GPU 0 the two SSD files, GPU 1 the rest; then the SSD bench rows against mamba_ssm
# (README's tables; the training rows were last run by the sixty-fifth session), on GPU 0 once its tests are done
# while GPU 1's still run (their CPU load may touch the host-bound rows: compare with a quiet run). Carry [".whl"].
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
ARGS=(-q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 --dist worksteal)
CUDA_VISIBLE_DEVICES=0 timeout 300 python3 -m pytest "${ARGS[@]}" tests/ops/test_ssd_forward.py \
  tests/ops/test_ssd_backward.py > "$OUT/tests-ssd.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 420 python3 -m pytest "${ARGS[@]}" tests --ignore tests/ops/test_ssd_forward.py \
  --ignore tests/ops/test_ssd_backward.py > "$OUT/tests-rest.txt" 2>&1 &
(sleep 210; CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m flashssm bench \
  -w train-2.7b-8x4K -w train-2.7b-1x32K -w 2.7b-8x4K -w 2.7b-32x2K -i flashssm -i mamba_ssm \
  --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1) &
wait
for f in tests-ssd tests-rest; do
  echo "== $f"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/$f.txt" | tail -12
done
echo "== bench"; tail -20 "$OUT/bench.txt"
