#!/usr/bin/env bash
# Ninth session, first GPU call: the SSD forward's own-state sweep (early publish, batch 1) and the
# backward's state recompute with larger steps (LaunchConfig.sub_a: one product of sub_a tokens a step,
# the decay of the [N, P] state and the cumsum paid half as often at 128 as at 64). Correctness first
# (the GPU tests of the new steps), then timings against the default in the same process. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/env.txt"
timeout 100 python3 -m pytest -q -m gpu tests/ops/test_ssd_forward.py -k "own_state_steps" -p no:cacheprovider \
  2>&1 | tail -5 | tee "$OUT/tests-own-steps.txt"
for spec in "2.7b-1x32K 2.7b-1x128K:8" "2.7b-1x8K:2" "2.7b-1x2K:1"; do
  names=${spec%%:*}; g=${spec##*:}
  timeout 130 python3 benchmarks/tune_ssd_forward.py --mode early $(for n in $names; do echo --workload $n; done) \
    --candidate 64,64,4,2,0,1,$g,0 --candidate 64,64,4,2,0,1,$g,0,128 --candidate 64,64,4,2,0,1,$g,0,256 \
    --candidate 64,64,4,2,0,1,$g,0 2>&1 | tee -a "$OUT/tune-own-steps.txt"
done
timeout 110 python3 benchmarks/ab_entering_states.py 2>&1 | tee "$OUT/ab-states-steps.txt"
