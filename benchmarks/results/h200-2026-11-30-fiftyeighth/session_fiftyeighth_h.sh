#!/usr/bin/env bash
# Fifty-eighth session, call 8 (about 200 s): is the SSD forward slower at 8x4K than at the fiftieth session's bench
# (0.461 ms then, 0.487 in call 1, mamba_ssm 1.395 and 1.392 in the two runs)? The fiftieth session's package
# (6cab080, `git archive 6cab080 flashssm` into old50/, carried untracked) against this one, alternating processes,
# inference forward, medians of 5 do_bench: 8x4K, 1x32K (0.596 then, 0.630 now) and 32x2K (0.953 then, 0.902 now).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
for i in 1 2; do
  for tree in old50: ""; do
    PYTHONPATH=${tree}$PWD timeout 90 python3 benchmarks/time_ssd_calls.py 8x4K 1x32K 32x2K 2>&1 | grep -v -i warn \
      | tee -a "$OUT/ab-trees.txt"
  done
done
