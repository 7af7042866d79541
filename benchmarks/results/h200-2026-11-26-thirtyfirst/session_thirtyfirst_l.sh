#!/usr/bin/env bash
# Thirty-first session, call 12 (H100, carry .whl): the landed kernel (commit bb8ebc0): the SSD forward bench with the
# peers (1x2K first: the first workload carries the peers' warm-up), and the training bench with mamba_ssm.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 280 python3 -m flashssm bench --json "$OUT/call12-bench.json" -w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K \
  -w 2.7b-1x128K -w 2.7b-8x4K -w 2.7b-32x2K -w 2.7b-1x2K -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla \
  > "$OUT/call12-bench.txt" 2>&1
grep -E "^device|^ceil|^2.7b|^flashssm|^mamba|^fla " "$OUT/call12-bench.txt"
timeout 170 python3 -m flashssm bench --json "$OUT/call12-bench-train.json" -w train-2.7b-8x4K -w train-2.7b-1x32K \
  -w train-2.7b-1x2K -i flashssm -i mamba_ssm > "$OUT/call12-bench-train.txt" 2>&1
grep -E "^train|^flashssm|^mamba" "$OUT/call12-bench-train.txt"
