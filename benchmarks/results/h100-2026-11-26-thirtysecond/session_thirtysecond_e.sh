#!/usr/bin/env bash
# (Ran on a working tree with one-wave-runtime-span.diff applied, which did not land; ab_tmp/fg_before.py was
# `git show 1312e18:flashssm/ops/ssd/forward_gluon.py`.)
# Thirty-second session, call 5 (H100): the Gluon kernel's span as a run-time value and its early publish in one wave
# of even spans (`gluon_group`). (1) The SSD forward test file on the GPU. (2) A/B, alternating in one process, medians
# of 5: the package (run-time span, the one-wave rule) against the kernel file before the change (ab_tmp/fg_before.py,
# the span a constexpr) at the same spans, and against the package's kernel at the previous rule's spans (--groups).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/call5-gpu.txt"
timeout 330 python3 -m pytest -q -p no:cacheprovider tests/ops/test_ssd_forward.py 2>&1 | tail -8 \
  | tee "$OUT/call5-tests-fwd.txt"
timeout 240 python3 benchmarks/ab_gluon_forward.py --rounds 5 --before ab_tmp/fg_before.py --workload 2.7b-8x4K \
  --workload 2.7b-32x2K --workload 2.7b-1x8K --workload 2.7b-1x32K --workload 2.7b-1x128K --groups 2,8,32 2>&1 \
  | grep -v Warn | tee "$OUT/call5-ab.txt"
