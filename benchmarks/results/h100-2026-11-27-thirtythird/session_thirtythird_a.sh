#!/usr/bin/env bash
# Thirty-third session, call 1: the Gluon kernel's early publish in one wave of even spans, the span a run-time value
# with CHUNK its power-of-two ceiling (`LaunchConfig.gluon_group`, `forward.gluon_span`). (1) A/B, alternating in one
# process, medians of 7: the package (one wave, run-time span) against the rule's spans (gluon-rule) and against the
# same span as a constexpr (gluon-G*, which must give the same bits). (2) The new GPU tests and the early public path.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/call1-gpu.txt"
timeout 300 python3 benchmarks/ab_gluon_forward.py --rounds 7 --workload 2.7b-1x2K --workload 2.7b-1x8K \
  --workload 2.7b-1x32K --workload 2.7b-1x128K --workload 2.7b-8x4K 2>&1 | grep -v Warn | tee "$OUT/call1-ab.txt"
timeout 200 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/ops/test_ssd_forward.py \
  -k "run_time_span or public_path or one_wave or span_rule" 2>&1 | tail -8 | tee "$OUT/call1-tests.txt"
