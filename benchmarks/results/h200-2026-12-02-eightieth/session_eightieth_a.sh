#!/usr/bin/env bash
# Eightieth session, call 1 (prepared by the seventy-ninth session, whose device time was spent):
# 1. what the selective scan's backward pays for its per-token options (the ceiling call 1 meant to take: its
#    --backward line named an inference workload). Offline (sm_90, triton 3.6, 8x2K's backward at four lanes): the
#    pass-2 loop 1613 instructions a tile with every option, 1333 without the gate, 1142 with none; MUFU 72 / 52 / 32.
# 2. SHARED_TOKENS_BWD (off in the package until timed): the tile's softplus, the gate's sigmoid and dy computed once a
#    channel and handed to its lanes, and the output work shared as the forward's. Offline 2504 -> 2208 instructions,
#    MUFU 115 -> 81, spills 24 -> 0 B, barriers 25 -> 10 (segments 3128 -> 2808, spills 12 -> 0; packed rows 5032 ->
#    4392). Prediction: -5 to -10 % of the backward where it waits on its instructions (8x2K), less where it waits on
#    its segments' hand-overs (1x32K). The CPU's selective-scan file passed with it forced on (91 passed).
# 3. the GPU's selective-scan tests with it on (its own test holds it to the unshared form within 1e-6 there).
# If it gains, turn it on (and the note in scan.py), else remove it with its test.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
timeout 200 python3 benchmarks/m1_forward_ceilings.py --backward --rounds 3 m1train-2.8b-8x2K \
  > "$OUT/ceilings-bwd.txt" 2>&1
timeout 240 python3 benchmarks/ab_scan_flag.py --flag SHARED_TOKENS_BWD --rounds 5 m1train-2.8b-8x2K \
  m1train-2.8b-1x32K m1train-2.8b-packed-8x2K > "$OUT/ab-shared-bwd.txt" 2>&1
timeout 150 python3 - > "$OUT/tests-shared.txt" 2>&1 <<'PY'
import sys
import pytest
from flashssm.ops.selective_scan import scan
scan.SHARED_TOKENS_BWD = True
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", "tests/ops/test_selective_scan.py",
                      "-k", "tokens_shared or output_shared or backward_layouts or segments or packed_rows"
                      " or gpu_bf16_against"]))
PY
echo "tests rc $?" >> "$OUT/tests-shared.txt"
tail -14 "$OUT/ceilings-bwd.txt"; tail -16 "$OUT/ab-shared-bwd.txt"; tail -3 "$OUT/tests-shared.txt"
