#!/usr/bin/env bash
# Sixty-fourth session, call 2 (about 560 s): the working tree = HEAD + the fma exponents (call 1) + the raw dt's
# gradient folded into the decay gradient's launch (`_tiles_da_kernel` RAW / BIAS_SUM: no `_dt_grad_kernel`, and
# dt_bias's gradient summed a program instead of by ddt.sum). `head64/flashssm` = git archive f31ac33 (untracked).
# 1. GPU tests, four processes: the backward file's tiles / decay-gradient tests and its every-option, packed,
#    deterministic, fp16 and bf16 tests; the forward file's Triton-kernel tests (call 1 ran 80 % of them).
# 2. time_ssd_calls, two rounds alternating HEAD / working tree; the per-kernel profile of the training call with
#    D, dt_bias and softplus (where dt_bias's gradient was ddt.sum).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
P="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q"
Fb=tests/ops/test_ssd_backward.py
Ff=tests/ops/test_ssd_forward.py
timeout 280 $P $Fb -k "tiles or da_head or dt_limit or negative_dt" > "$OUT/tests-a.txt" 2>&1 &
timeout 280 $P $Fb -k "not tiles and not da_head and not dt_limit and not negative_dt" > "$OUT/tests-b.txt" 2>&1 &
timeout 280 $P $Ff -k "not gluon and every_launch_config" > "$OUT/tests-c.txt" 2>&1 &
timeout 280 $P $Ff -k "not gluon and not every_launch_config" > "$OUT/tests-d.txt" 2>&1 &
wait
for f in "$OUT"/tests-*.txt; do echo "== $f"; grep -E "passed|failed|^FAILED" "$f" | tail -6 | cut -c1-300; done
for i in 1 2; do
  for t in head new; do
    case $t in head) PP=$PWD/head64:$PWD ;; new) PP=$PWD ;; esac
    PYTHONPATH=$PP timeout 70 python3 benchmarks/time_ssd_calls.py 8x4K 32x2K 1x32K 1x128K --train 8x4K 1x32K \
      > "$OUT/time-$i-$t.txt" 2>&1
    echo "== $i $t rc $?"; grep -v -i warn "$OUT/time-$i-$t.txt" | cut -c1-70
  done
done
for t in head new; do
  case $t in head) PP=$PWD/head64:$PWD ;; new) PP=$PWD ;; esac
  PYTHONPATH=$PP timeout 45 python3 benchmarks/train_kernel_times.py --workload 8x4K --options \
    > "$OUT/kernels-$t.txt" 2>&1
  echo "== kernels $t rc $?"; grep -v -i warn "$OUT/kernels-$t.txt" | head -20 | cut -c1-100
done
