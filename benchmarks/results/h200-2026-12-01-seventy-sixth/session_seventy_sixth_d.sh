#!/usr/bin/env bash
# Seventy-sixth session, call 4: forward_gluon.LOG_DT (the early publish's masked decays as one exponential of
# cs_i log2 e - col_j, col = cs log2 e - log2 dt from the preparation launch's third plane): the Gluon forward's GPU
# tests (early forms: LOG_DT on by default), then the A/B (forward alone, batch 1 and 8 x 4K, where it does not
# apply; the 1 x 32K training call), y's error on and off.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
timeout 230 python3 -m pytest -q -x -p no:cacheprovider -o addopts="-ra" tests/ops/test_ssd_forward.py -m gpu \
  -k "gluon_forward and not fp16 or gluon_run_time_span or gluon_public_path or gluon_packed or gluon_sweep_states or gluon_pdl" \
  > "$OUT/tests.txt" 2>&1
tail -3 "$OUT/tests.txt"
timeout 150 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.LOG_DT --value False --value True \
  --workload 2.7b-1x128K --workload 2.7b-1x32K --workload 2.7b-1x8K --workload 2.7b-1x2K --workload 2.7b-8x4K \
  --rounds 5 --kernels > "$OUT/ab-logdt.txt" 2>&1
grep -v -i warn "$OUT/ab-logdt.txt"
timeout 60 python3 benchmarks/ab_forward_accuracy.py flashssm.ops.ssd.forward_gluon.LOG_DT --value False --value True \
  --workload accuracy-2x1K --workload 2.7b-1x2K > "$OUT/acc-logdt.txt" 2>&1
cat "$OUT/acc-logdt.txt"
timeout 90 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.forward_gluon.LOG_DT --value False --value True \
  --workload 1x32K --rounds 3 > "$OUT/ab-logdt-train.txt" 2>&1
grep -v -i warn "$OUT/ab-logdt-train.txt" | head -20
