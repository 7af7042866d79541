#!/usr/bin/env bash
# Fifty-eighth session, call 2 (about 580 s): the SSD training backward's launch knobs, set on an H100 (3.0 TB/s), swept
# on the H200 (4.2 TB/s measured by the bench), where its launches move 1.7-2.7 TB/s of their own traffic. Each
# `ab_train_flag.py` alternates the values in one process (training call, medians of 5, per-kernel times), 2.7B
# shape, bf16, no options (the bench's train-* call). Prediction: deeper pipelines (more bytes in flight an SM) gain
# 2-5 % of the kernel they feed on this GPU; the rest within +-1 %.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/ab"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
ab() {  # ab NAME LIMIT SWITCH VALUES...
  local name=$1 limit=$2 switch=$3; shift 3
  local vals=(); for v in "$@"; do vals+=(--value "$v"); done
  timeout "$limit" python3 benchmarks/ab_train_flag.py "$switch" "${vals[@]}" --workload 8x4K --workload 1x32K \
    --rounds 5 > "$OUT/ab/$name.txt" 2>&1
  echo "== $name rc $?"; grep -v -i warn "$OUT/ab/$name.txt" | tail -14 | cut -c1-200
}
ab paths-stages 120 flashssm.ops.ssd.backward_tiles.PATHS_STAGES 3 4 2
ab pair-stages 110 flashssm.ops.ssd.backward_tiles.TILES_BC_STAGES_NARROW 3 4
ab chain-stages 100 flashssm.ops.ssd.backward_chain.DSTATES_STAGES 2 3
ab chain-warps 100 flashssm.ops.ssd.backward_chain.DSTATES_WARPS 4 8
ab tiles-stages 100 flashssm.ops.ssd.backward_tiles.TILES_STAGES 1 2
