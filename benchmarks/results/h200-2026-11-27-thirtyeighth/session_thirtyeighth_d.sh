#!/usr/bin/env bash
# Thirty-eighth session, call 4: packed sequences with many chains take the tiles' smaller chunks (TILES_CHUNK_PACKED;
# their recompute and chain launch hand over a 128-token chunk at a time). (1) The backward's GPU tests of packed
# sequences, the tiles' chunks and the deterministic mode; (2) packed against dense with the switch on and off, and the
# Mamba-1 rows after the cu_seqlens cache.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 170 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "varlen or packed or smaller_chunks or deterministic or in_place" > "$OUT/call4-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed" "$OUT/call4-tests.txt" | head -20
for v in True False; do
  timeout 100 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --ssd 64x512 --scan none --rounds 3 \
    --set flashssm.ops.ssd.backward_chain.TILES_CHUNK_PACKED=$v > "$OUT/call4-packed-$v.txt" 2>&1
  grep -v -i warn "$OUT/call4-packed-$v.txt" | grep -v lengths
done
timeout 100 python3 benchmarks/packed_vs_dense.py --ssd none --scan 8x2048 --rounds 3 > "$OUT/call4-packed-scan.txt" 2>&1
grep -v -i warn "$OUT/call4-packed-scan.txt" | grep -v lengths
