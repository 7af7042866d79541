#!/usr/bin/env bash
# Sixty-fifth session, call 2 (about 420 s; head65/ holds the committed package, c8b9bbc: `git archive HEAD flashssm`).
# The Gluon forward's per-head D added from the x tile it loaded for w x (x_r), not from a second shared-memory load
# in the products' layout (offline: late loop with D 1019 -> 982 instructions, early output sweep 1035 -> 986, the
# late loop with the tiles' states 1156 -> 1115). Separate processes, alternating, with D, dt_bias and softplus (a
# layer's call): the forward alone and the training call; the sums of the outputs say whether the bits moved.
# Then Gluon forward tests (per-head D, fp16, swept states, packed, run-time spans), on a copy of the repository.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
T="python3 benchmarks/time_ssd_calls.py --options 8x4K 1x32K 1x128K --train 8x4K 1x32K"
for r in 1 2; do
  for tree in old new; do
    if [ $tree = old ]; then P=$PWD/head65:$PWD; else P=$PWD; fi
    PYTHONPATH=$P timeout 100 $T > "$OUT/time-$tree-$r.txt" 2>&1
    echo "== $tree $r rc $?"; grep -v -i warn "$OUT/time-$tree-$r.txt" | cut -c1-150
  done
done
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
cd /tmp/xrepo
for k in "test_gpu_gluon_forward and not fp16 and D-h" "gluon and (fp16 or sweep)" \
    "gluon and (packed or public or run_time)"; do
  ( timeout 200 python3 -m pytest -o addopts=-ra -p no:cacheprovider -q tests/ops/test_ssd_forward.py -k "$k" \
    > "$OUT/tests-$(echo $k | tr -c 'a-z0-9' '_').txt" 2>&1; echo "rc $?" >> "$OUT/tests-$(echo $k | tr -c 'a-z0-9' '_').txt" ) &
done
wait
echo "== tests"; for f in "$OUT"/tests-*.txt; do echo "$f"; tail -3 "$f"; done
