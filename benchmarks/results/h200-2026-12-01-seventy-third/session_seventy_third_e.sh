#!/usr/bin/env bash
# Seventy-third session, call 5 (one H200). Why the bench (a synchronisation after every step) has activation
# checkpointing's 370m 8 x 2K step at ~310 ms where steps back to back take ~205: the host's time to issue a step and
# the synchronised step, with and without checkpointing, and the recompute likewise (recompute_profile.py, --top 0).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=.
timeout 200 python3 benchmarks/recompute_profile.py --preset mamba2-370m --shape 8x2048 --checkpointing --top 0 \
  --rounds 3 > "$OUT/checkpointing.txt" 2>&1
timeout 200 python3 benchmarks/recompute_profile.py --preset mamba2-370m --shape 8x2048 --top 0 --rounds 3 \
  > "$OUT/recompute.txt" 2>&1
grep -hv "USDT\|Warning\|_warn_once" "$OUT"/*.txt
