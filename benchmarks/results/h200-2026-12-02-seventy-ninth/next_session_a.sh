#!/usr/bin/env bash
# Prepared for the next session (not run): what the selective scan's backward pays for its per-token options, the
# measurement call 1 of the seventy-ninth session meant to take (its --backward line named an inference workload).
# Offline (sm_90, triton 3.6, 8x2K's backward, four lanes): the pass-2 loop 1613 instructions a tile with every
# option, 1333 without the gate, 1142 with none; MUFU 72 / 52 / 32 (32 the decays): Triton computes each channel's
# per-token work on all four of its lanes. If "bare" is far faster than the instructions' -29 % of pass 2 explain
# little, the backward waits on something else; if it is near, a layout that does that work once a channel pays.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
timeout 300 python3 benchmarks/m1_forward_ceilings.py --backward --rounds 3 m1train-2.8b-8x2K m1train-2.8b-1x32K \
  > "$OUT/ceilings-bwd.txt" 2>&1
tail -14 "$OUT/ceilings-bwd.txt"
