#!/usr/bin/env bash
# Seventy-ninth session, call 1: what the selective scan's forward and backward pay for their per-token options
# (softplus, the gate, D) and the forward for its B/C reads (PROBE_BC_FWD: two tiles of B and C only, always in L1;
# wrong y), before choosing between a layout change of the per-token work and a staging of B and C.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > "$OUT/gpu.txt"
timeout 280 python3 benchmarks/m1_forward_ceilings.py --probe PROBE_BC_FWD --rounds 5 \
  m1-2.8b-8x2K m1-2.8b-1x32K > "$OUT/ceilings-fwd.txt" 2>&1
timeout 200 python3 benchmarks/m1_forward_ceilings.py --backward --variant all --variant bare --rounds 3 \
  m1-2.8b-8x2K > "$OUT/ceilings-bwd.txt" 2>&1
cat "$OUT"/ceilings-fwd.txt "$OUT"/ceilings-bwd.txt | tail -40
