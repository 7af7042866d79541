#!/usr/bin/env bash
# Ready for the next session (about 250 s, no wheels needed): the fuzzer's decay80 dA bound on the GPU. On the CPU
# (fifty-eighth session, `cpu-decay80-da.txt`) decay80 cases' dA errors were 0.001-0.76 of one unit of the terms bound
# that the other 16-bit cases now take, while their own bound dwarfs dA (a planted 30 % error passes). The bound was
# made for the GPU's tf32 products: this collects the GPU's figures (fp16 and bf16) to decide whether decay80 can take
# the terms bound (with what margin), then checks the planted error against the current harness.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
R=benchmarks/results/h200-2026-11-30-fiftyeighth
mkdir -p /tmp/t58 && cp -r tests /tmp/t58/ && patch -s -d /tmp/t58 -p1 < $R/decay80-log.diff
PYTHONPATH=/tmp/t58:$PWD timeout 150 python3 $R/decay80_log.py 11 40 cuda > "$OUT/gpu-decay80-da.txt" 2>&1
echo "== decay80 rc $?"; grep -v -i warn "$OUT/gpu-decay80-da.txt" | sort -k 13 -g | tail -8 | cut -c1-200
PYTHONPATH=$PWD timeout 90 python3 $R/plant_da.py 1.3 11 30 cuda > "$OUT/gpu-plant.txt" 2>&1
echo "== plant rc $?"; tail -12 "$OUT/gpu-plant.txt" | cut -c1-200
