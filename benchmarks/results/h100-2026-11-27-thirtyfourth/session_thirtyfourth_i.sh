#!/usr/bin/env bash
# Thirty-fourth session, call 9 (H100, carry .whl): the model-level training scenario (Mamba-2 370m, 8x2K, AdamW,
# mamba_ssm in the same run) with the states stored by the forward (the default now) and without
# (FLASHSSM_STORE_STATES=0): tokens/s and the peak memory a model takes with them.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 -m flashssm bench model -s train-370m-8x2K -i flashssm -i mamba_ssm \
  --json "$OUT/call9-model-train.json" > "$OUT/call9-model-train.txt" 2>&1
grep -v Warn "$OUT/call9-model-train.txt" | tail -8
FLASHSSM_STORE_STATES=0 timeout 150 python3 -m flashssm bench model -s train-370m-8x2K -i flashssm \
  --json "$OUT/call9-model-train-nostore.json" > "$OUT/call9-model-train-nostore.txt" 2>&1
grep -v Warn "$OUT/call9-model-train-nostore.txt" | tail -6
