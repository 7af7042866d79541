#!/usr/bin/env bash
# Thirty-ninth session, call 2: call 1's packed_vs_dense runs hit their 100 s limits (mamba_ssm's compiles); here
# flashssm alone, four forms of packed training in one process each: (A) the chain in spans with the tiles in chunks
# of 128 (default; ragged packings then recompute the states: in 128-token chunks they pass x's bytes), (B) the switch
# off (the session's start), (C) spans with the tiles in the forward's 256 (stored states), (D) A with the states
# stored even past x's bytes (STATES_OVER_X 0.5). Peak MiB a training call beside each.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
M=flashssm.ops.ssd.backward_chain
run() {
  local tag=$1; shift
  timeout 130 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --ssd 64x512 --scan none --rounds 5 "$@" \
    > "$OUT/call2-packed-$tag.txt" 2>&1
  echo "== $tag $*"; grep -v -i warn "$OUT/call2-packed-$tag.txt" | grep -v "lengths\|^set\|NVIDIA\|mamba_ssm:"
}
run A
run B --set $M.CHAIN_SPANS_PACKED=False
run C --set $M.TILES_CHUNK_PACKED=False
run D --set $M.STATES_OVER_X=0.5
