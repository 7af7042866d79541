#!/usr/bin/env bash
# Thirty-fourth session, call 7 (H100): the Gluon forward's early publish skips the own-state sweep in a chain's last
# span (it hands nothing on; its final state is its running state after the sweep). (1) the forward file's Gluon tests
# and the stored states' tests; (2) A/B against the kernel before (forward_gluon_abc53aa.py, the same y bits expected)
# at batch 1.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  -k "gluon or sweep_states or early" > "$OUT/call7-tests.txt" 2>&1
tail -4 "$OUT/call7-tests.txt"
D=benchmarks/results/h100-2026-11-27-thirtyfourth
# (forward_gluon_abc53aa.py was `git show abc53aa:flashssm/ops/ssd/forward_gluon.py`, carried for the call and removed
# after it; the change tried is last-span-no-own-state.diff)
timeout 200 python3 benchmarks/ab_gluon_forward.py --workload 2.7b-1x128K --workload 2.7b-1x32K --workload 2.7b-1x8K \
  --rounds 5 --before $D/forward_gluon_abc53aa.py 2>&1 | grep -v Warn | tee "$OUT/call7-ab-lastspan.txt"
