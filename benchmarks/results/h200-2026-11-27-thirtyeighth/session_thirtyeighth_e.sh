#!/usr/bin/env bash
# Thirty-eighth session, call 5: packed training takes the states the Gluon forward stores at the chunk table's rows
# (varlen_state_rows; before, packed always recomputed them: 0.44 ms of 3.7 at 8x4096 on this H200). (1) The GPU
# tests of the Gluon kernel, of packed sequences and of the tiles' stored states; (2) packed against dense with the
# forward's stored states on and off (TILES_STATES_FROM_FORWARD), and the Mamba-1 rows.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  tests/ops/test_ssd_backward.py -k "gluon or varlen or packed or states or deterministic" > "$OUT/call5-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed" "$OUT/call5-tests.txt" | head -20
for v in True False; do
  timeout 80 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --ssd 64x512 --scan none --rounds 3 \
    --set flashssm.ops.ssd.backward_chain.TILES_STATES_FROM_FORWARD=$v > "$OUT/call5-packed-$v.txt" 2>&1
  grep -v -i warn "$OUT/call5-packed-$v.txt" | grep -v lengths
done
