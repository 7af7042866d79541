#!/usr/bin/env bash
# Thirty-first session, call 5, on an H100 (carry .whl): the package A/B, the SSD forward bench with the peers, the
# training bench with mamba_ssm. ab_tmp/ (not kept) held forward_gluon.py before the session (`git show
# e30b1e3:flashssm/ops/ssd/forward_gluon.py`) and with the 16-bit move of y alone (commit cf5798d's kernel without the
# dt and cumsum stages); calls 2 and 3 used the same two files.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 150 python3 benchmarks/ab_gluon_forward.py --before ab_tmp/fg_e30b1e3.py --before ab_tmp/fg_epilogue.py \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-1x128K --workload 2.7b-1x32K --workload 2.7b-1x8K 2>&1 \
  | grep -v Warn | tee "$OUT/call5-ab.txt"
timeout 260 python3 -m flashssm bench --json "$OUT/call5-bench.json" -w 2.7b-1x8K -w 2.7b-1x2K -w 2.7b-1x32K \
  -w 2.7b-1x128K -w 2.7b-8x4K -w 2.7b-32x2K -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla \
  > "$OUT/call5-bench.txt" 2>&1
grep -E "^device|^ceil|^2.7b|^flashssm |^mamba|^fla " "$OUT/call5-bench.txt"
timeout 170 python3 -m flashssm bench --json "$OUT/call5-bench-train.json" -w train-2.7b-8x4K -w train-2.7b-1x32K \
  -w train-2.7b-1x2K -i flashssm -i mamba_ssm > "$OUT/call5-bench-train.txt" 2>&1
grep -E "^train|^flashssm|^mamba|^impl" "$OUT/call5-bench-train.txt"
