#!/usr/bin/env bash
# Seventy-first session, call 1: the seventieth's prepared next_session_a.sh on one H200 (only that kind is lent
# today), in order of what is owed: the GPU tests of FEWER_TORCH_CALLS and the capability merge (SSD forward,
# dispatch, SSD backward, test_prepared), the A/B of FEWER_TORCH_CALLS (predicted -40 to -60 us at 1 x 2K, 0 at 8 x 4K),
# then a whole model's step with the backward on the calling thread. Carry [".whl"].
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.:/tmp/site
timeout 260 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/ops/test_ssd_forward.py tests/ops/test_dispatch.py tests/ops/test_ssd_backward.py \
  tests/test_prepared.py > "$OUT/tests.txt" 2>&1
timeout 100 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.FEWER_TORCH_CALLS \
  --workload 1x2K --workload 8x4K --rounds 5 > "$OUT/ab-fewer-torch-calls.txt" 2>&1
timeout 170 python3 benchmarks/model_step_threads.py --preset mamba2-130m --preset mamba-130m \
  --shape 1x512 --shape 4x2048 --rounds 3 > "$OUT/model-threads.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head; tail -1 "$OUT/tests.txt"
grep -E "call|FEWER" "$OUT/ab-fewer-torch-calls.txt" | head -8
grep -v "Warning\|warn_once" "$OUT/model-threads.txt" | tail -12
