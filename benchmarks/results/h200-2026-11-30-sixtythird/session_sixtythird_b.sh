#!/usr/bin/env bash
# Sixty-third session, call 2 (about 420 s): call 1 had the training call -1.9 % (8x4K) and -3.3 % (1x32K), the
# forward -1 to -2 %, but in its kernel profiles the Gluon training forward +3 % and the tiles kernel +1 %: each of
# the two switches (forward_gluon.FAST_EXP, backward_tiles.TILES_FAST_EXP; False is the kernel before, the same SASS
# offline) A/B'd in one process (ab_train_flag.py, alternating, medians of 5), the forward alone beside, then the
# Gluon switch with D, dt_bias and softplus, and 1x128K's forward (ab_gluon_forward.py has no switch: --forward).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
A="python3 benchmarks/ab_train_flag.py"
PYTHONPATH=$PWD timeout 200 $A flashssm.ops.ssd.forward_gluon.FAST_EXP --value False --value True \
  --workload 8x4K --workload 1x32K --forward > "$OUT/ab-gluon-exp.txt" 2>&1
echo "== gluon rc $?"; grep -v -i warn "$OUT/ab-gluon-exp.txt" | cut -c1-160
PYTHONPATH=$PWD timeout 150 $A flashssm.ops.ssd.backward_tiles.TILES_FAST_EXP --value False --value True \
  --workload 8x4K --workload 1x32K > "$OUT/ab-tiles-exp.txt" 2>&1
echo "== tiles rc $?"; grep -v -i warn "$OUT/ab-tiles-exp.txt" | cut -c1-160
PYTHONPATH=$PWD timeout 120 $A flashssm.ops.ssd.forward_gluon.FAST_EXP --value False --value True \
  --workload 8x4K --options --forward > "$OUT/ab-gluon-exp-options.txt" 2>&1
echo "== gluon options rc $?"; grep -v -i warn "$OUT/ab-gluon-exp-options.txt" | cut -c1-160
PYTHONPATH=$PWD timeout 120 $A flashssm.ops.ssd.forward_gluon.FAST_EXP --value False --value True \
  --workload 1x128K --forward --rounds 3 > "$OUT/ab-gluon-exp-128K.txt" 2>&1
echo "== gluon 128K rc $?"; grep -v -i warn "$OUT/ab-gluon-exp-128K.txt" | cut -c1-160
