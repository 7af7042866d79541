#!/usr/bin/env bash
# Sixty-fourth session, call 1 (about 540 s): what the sixty-third owes and its prepared lead (its next_session_a.sh,
# with the fma diff rebased onto the review's store_tile: `fma64/flashssm`, untracked, and the tree before the
# sixty-third session, `old63/flashssm` = git archive 2ae697f; both deleted before committing).
# 1. test_fast_exp on the GPU. 2. The fma exponents' forward GPU tests, the whole forward file in four processes run
# from a copy of the repository with fma64's package (python -m pytest puts the repository root first on sys.path,
# so a PYTHONPATH entry would not be the package tested). 3. One round of time_ssd_calls: old63, HEAD, fma.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
P="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
timeout 90 $P tests/ops/test_triton_common.py > "$OUT/tests-common.txt" 2>&1
echo "== common rc $?"; tail -1 "$OUT/tests-common.txt"
rm -rf /tmp/fmarepo && mkdir /tmp/fmarepo && cp -r tests benchmarks pyproject.toml /tmp/fmarepo/ \
  && cp -r fma64/flashssm /tmp/fmarepo/
F=tests/ops/test_ssd_forward.py
(cd /tmp/fmarepo && timeout 300 $P $F -k "gluon_forward and not fp16 and late" > "$OUT/tests-fma-a.txt" 2>&1) &
(cd /tmp/fmarepo && timeout 300 $P $F -k "gluon_forward and not fp16 and early" > "$OUT/tests-fma-b.txt" 2>&1) &
(cd /tmp/fmarepo && timeout 300 $P $F -k "gluon and not (gluon_forward and not fp16)" > "$OUT/tests-fma-c.txt" 2>&1) &
(cd /tmp/fmarepo && timeout 300 $P $F -k "not gluon" > "$OUT/tests-fma-d.txt" 2>&1) &
wait
for f in "$OUT"/tests-fma-*.txt; do echo "== $f"; grep -E "passed|failed|^FAILED" "$f" | tail -6 | cut -c1-300; done
for t in old new fma; do
  case $t in old) PP=$PWD/old63:$PWD ;; new) PP=$PWD ;; fma) PP=$PWD/fma64:$PWD ;; esac
  PYTHONPATH=$PP timeout 75 python3 benchmarks/time_ssd_calls.py 8x4K 32x2K 1x32K 1x128K --train 8x4K 1x32K \
    > "$OUT/time-1-$t.txt" 2>&1
  echo "== 1 $t rc $?"; grep -v -i warn "$OUT/time-1-$t.txt" | cut -c1-70
done
