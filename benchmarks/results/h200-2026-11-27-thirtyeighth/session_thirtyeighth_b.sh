#!/usr/bin/env bash
# Thirty-eighth session, call 2: where packed ssd_scan loses against dense (call 1: forward 2.2x, training 1.66x the
# dense time at 8x4096). The same with the Gluon kernel off (the Triton kernel for dense too), each training call's
# kernels by the profiler; then the Mamba-1 rows that call 1's limit cut.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --scan none --kernels --rounds 3 \
  > "$OUT/call2-packed-kernels.txt" 2>&1
grep -v -i warn "$OUT/call2-packed-kernels.txt" | grep -v lengths
FLASHSSM_GLUON=0 timeout 100 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --scan none --rounds 3 \
  > "$OUT/call2-packed-triton.txt" 2>&1
grep -v -i warn "$OUT/call2-packed-triton.txt" | grep -v lengths
timeout 150 python3 benchmarks/packed_vs_dense.py --ssd none --scan 8x2048 --rounds 3 > "$OUT/call2-packed-scan.txt" 2>&1
grep -v -i warn "$OUT/call2-packed-scan.txt" | grep -v lengths
