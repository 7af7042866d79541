#!/usr/bin/env bash
# Seventieth session, call 3 (two H200s, ~330 s): the fuzzer at models' shapes on the GPU, every op (GPU 0) and
# ssd_scan alone (GPU 1: the training forward's TMA form and the scaled fp16 states since its last GPU run); then on
# GPU 1 the PDL A/B again at the small calls where call 2 saw it gain (1 x 2K -3.1 %), more rounds.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
CUDA_VISIBLE_DEVICES=0 timeout 300 python3 -m tests.fuzz.fuzz --seed 7001 --budget 270 --shapes model \
  > "$OUT/fuzz-all-7001.txt" 2>&1 &
(
  CUDA_VISIBLE_DEVICES=1 timeout 200 python3 -m tests.fuzz.fuzz --seed 7002 --budget 170 --shapes model --ops ssd_scan \
    > "$OUT/fuzz-ssd-7002.txt" 2>&1
  CUDA_VISIBLE_DEVICES=1 timeout 100 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.PDL \
    --rounds 11 --kernels --workload 2.7b-1x2K --workload 2.7b-1x8K --workload 2.7b-8x4K \
    > "$OUT/ab-pdl-small.txt" 2>&1
) &
wait
for f in fuzz-all-7001 fuzz-ssd-7002; do echo "== $f"; grep -iE "fail|error|cases" "$OUT/$f.txt" | tail -8; done
grep -v "0.0000,\|Warning\|warn_once" "$OUT/ab-pdl-small.txt"
