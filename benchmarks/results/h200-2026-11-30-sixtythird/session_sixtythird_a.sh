#!/usr/bin/env bash
# Sixty-third session, call 1 (about 540 s): exponentials by ex2.approx.ftz (the MUFU alone) instead of tl.exp /
# gl.exp's ex2.approx with its subnormal fixups (five instructions an exponential), in the Gluon forward (cumsums in
# log2 units) and every SSD Triton kernel (`triton_common.fast_exp`), and the decay gradient's launch a block of
# heads a program. A/B against the tree before (old63/ = 2ae697f's package): time_ssd_calls.py, alternating
# processes, two rounds, then each tree's training kernels (train_kernel_times.py).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
for i in 1 2; do
  for t in old new; do
    if [ $t = old ]; then PP=$PWD/old63:$PWD; else PP=$PWD; fi
    PYTHONPATH=$PP timeout 150 python3 benchmarks/time_ssd_calls.py 8x4K 32x2K 1x32K 1x128K --train 8x4K 1x32K --peak \
      > "$OUT/time-$i-$t.txt" 2>&1
    echo "== $i $t rc $?"; grep -v -i warn "$OUT/time-$i-$t.txt" | cut -c1-160
  done
done
for t in old new; do
  if [ $t = old ]; then PP=$PWD/old63:$PWD; else PP=$PWD; fi
  PYTHONPATH=$PP timeout 60 python3 benchmarks/train_kernel_times.py --workload 8x4K --workload 1x32K \
    > "$OUT/kernels-$t.txt" 2>&1
  echo "== kernels $t rc $?"; grep -v -i warn "$OUT/kernels-$t.txt" | cut -c1-120
done
