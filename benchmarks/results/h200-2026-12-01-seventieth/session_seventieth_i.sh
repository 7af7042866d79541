#!/usr/bin/env bash
# Seventieth session, call 9 (one H200, ~60 s): call 8 found every host step of a 1 x 2K training call ~2x the same
# step in an inference call (the preparation launch 25 against 9.8 us). Which thread runs the backward, and the
# phases again with the process on one core (taskset) against none.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 60 python3 benchmarks/results/h200-2026-12-01-seventieth/thread_check.py > "$OUT/thread.txt" 2>&1
tail -2 "$OUT/thread.txt"
timeout 60 python3 benchmarks/host_phases.py -w train-2.7b-1x2K > "$OUT/phases-free.txt" 2>&1
timeout 60 taskset -c 3 python3 benchmarks/host_phases.py -w train-2.7b-1x2K > "$OUT/phases-one-core.txt" 2>&1
timeout 60 taskset -c 3,4 python3 benchmarks/host_phases.py -w train-2.7b-1x2K > "$OUT/phases-two-cores.txt" 2>&1
for f in free one-core two-cores; do echo "== $f"; grep -v "Warning\|warn_once" "$OUT/phases-$f.txt"; done
