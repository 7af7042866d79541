#!/usr/bin/env bash
# Fifty-seventh session, call 3 (about 300 s): the fp16 forward. Call 2 had fp16 training's forward (the Triton
# kernel: the Gluon one takes bf16 only) at 1.30 ms at 8 x 4K against bf16's Gluon 0.49, and 1.04 in the tree before
# ca7fc30, where it stored the tiles' states. Offline (sm_90, triton 3.6) the late form's fp16 kernel is 2864
# instructions against bf16's 2264, 184 bytes of spills against 104: not 2x. (1) The inference forward in fp16, bf16
# and bf16 on the Triton kernel (FLASHSSM_GLUON=0), medians of 5; (2) the stall reasons of the fp16 and the bf16
# Triton forwards at 8 x 4K (profile_fetch.sh).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/f" "$OUT/p16" "$OUT/p32"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for v in "bf16 1" "bf16 0" "fp16 1"; do
  set -- $v
  FLASHSSM_GLUON=$2 timeout 120 python3 benchmarks/time_ssd_calls.py 8x4K 1x32K 1x128K 1x8K --dtype $1 \
    >> "$OUT/f/forward.txt" 2>&1
  echo "forward $1 gluon $2 rc $?" | tee -a "$OUT/f/forward.txt"
done
cut -c1-150 "$OUT/f/forward.txt"
timeout 100 bash benchmarks/profile_fetch.sh "$OUT/p16" ssd-forward-fp16:8x4K ssd-forward-fp16:1x32K > "$OUT/f/stalls-fp16.txt" 2>&1
echo "stalls fp16 rc $?"; cut -c1-330 "$OUT/f/stalls-fp16.txt"
FLASHSSM_GLUON=0 timeout 100 bash benchmarks/profile_fetch.sh "$OUT/p32" ssd-forward:8x4K ssd-forward:1x32K \
  > "$OUT/f/stalls-bf16-triton.txt" 2>&1
echo "stalls bf16 triton rc $?"; cut -c1-330 "$OUT/f/stalls-bf16-triton.txt"
tar czf "$OUT/f/raw.tgz" -C "$OUT" p16 p32 && rm -rf "$OUT/p16" "$OUT/p32"
