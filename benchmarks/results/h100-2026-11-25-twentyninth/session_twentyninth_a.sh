#!/usr/bin/env bash
# Twenty-ninth session, call 1: the SSD forward's late-publish sweep in Gluon with asynchronous wgmma
# (benchmarks/results/h100-2026-11-25-twentyninth/gluon_ssd_forward_experiment.py): correctness against float64 and the Triton kernel on three odd cases, then an
# alternating A/B against the Triton kernel at 8x4K and 32x2K (both with the preparation launch).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt" 2>&1
python3 -c "import triton, torch; print(triton.__version__, torch.__version__)" >> "$OUT/device.txt"
timeout 400 python3 benchmarks/results/h100-2026-11-25-twentyninth/gluon_ssd_forward_experiment.py --workload 2.7b-8x4K --workload 2.7b-32x2K 2>&1 \
  | grep -v -i warn | tee "$OUT/call1-gluon-ab.txt"
