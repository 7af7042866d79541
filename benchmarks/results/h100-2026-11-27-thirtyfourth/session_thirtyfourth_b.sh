#!/usr/bin/env bash
# Thirty-fourth session, call 2 (H100, carry .whl): the SSD backward file on the GPU with the forward storing the tiles'
# states (every tiles-form test without z takes them), then the training bench with mamba_ssm in the same run; first
# the A/B of where in the Gluon kernel's iteration the state is stored (forward_gluon.STATES_AT 0, 1, 2).
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
# (--at and forward_gluon.STATES_AT were removed after this call, the store kept where --at 1 put it)
timeout 100 python3 benchmarks/ab_train_states.py --workload 8x4K --workload 1x32K --rounds 3 --at 1,2 \
  2>&1 | grep -v Warn | tee "$OUT/call2-ab-at.txt"
timeout 170 python3 -m flashssm bench --json "$OUT/call2-bench-train.json" -w train-2.7b-8x4K -w train-2.7b-1x32K \
  -w train-2.7b-1x2K -i flashssm -i flashssm-deterministic -i mamba_ssm > "$OUT/call2-bench-train.txt" 2>&1
grep -E "^device|^train|^flashssm|^mamba" "$OUT/call2-bench-train.txt"
timeout 250 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  > "$OUT/call2-tests-bwd.txt" 2>&1
tail -15 "$OUT/call2-tests-bwd.txt"
