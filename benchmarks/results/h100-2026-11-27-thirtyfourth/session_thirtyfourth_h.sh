#!/usr/bin/env bash
# Thirty-fourth session, call 8 (H100): the last span's skipped own state again, as CUDA-graph replays (no host time;
# call 7's 'before' kernel took Triton's own launcher), more rounds.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
D=benchmarks/results/h100-2026-11-27-thirtyfourth
# (forward_gluon_abc53aa.py was `git show abc53aa:flashssm/ops/ssd/forward_gluon.py`, carried for the call and removed
# after it; the change tried is last-span-no-own-state.diff)
timeout 280 python3 benchmarks/ab_gluon_forward.py --workload 2.7b-1x128K --workload 2.7b-1x32K --workload 2.7b-1x8K \
  --rounds 7 --graph --before $D/forward_gluon_abc53aa.py 2>&1 | grep -v Warn | tee "$OUT/call8-ab-lastspan-graph.txt"
