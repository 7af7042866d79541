#!/usr/bin/env bash
# Thirtieth session, calls 4 and 5 (VARIANTS="5 6" CALL=call5): bisecting the early Gluon forward's fault (headdim
# 128, dstate 64) with the temporary FLASHSSM_GLUON_VARIANT switch: 1 own-state products waited for at once, 2 a barrier before the output sweep, 3 no
# own-state sweep (wrong y), 4 the state published after the sweep (wrong y), 5 a store no program takes keeping the
# running state live after the sweep (the fix kept), 6 cp.async waited for before the publish; FLASHSSM_GLUON=0 the
# Triton kernel. The switch was a temporary edit of forward_gluon.py, not committed; the notes describe each variant.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-thirtieth
for v in ${VARIANTS:-0 1 2 3 4 triton}; do
  for i in 1 2 3; do
    for s in "2 1000 16 128 64 2 128 all" "2 777 6 128 64 3 128 none"; do
      if [ $v = triton ]; then e="FLASHSSM_GLUON=0"; else e="FLASHSSM_GLUON_VARIANT=$v"; fi
      echo "variant $v: $(env $e timeout 60 python3 $R/repro_early.py $s 2>&1 | grep -E "^\[|Error" | head -1)"
    done
  done
done > "$OUT/${CALL:-call4}-variants.txt"
cat "$OUT/${CALL:-call4}-variants.txt"
