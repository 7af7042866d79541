#!/usr/bin/env bash
# Seventy-eighth session, call 4: the late sweep's copies two sub-chunks ahead (forward_gluon.COPY_AHEAD: issued after
# the wait for the iteration's products, into the stage those products read), which takes out the barrier Gluon's
# barrier pass put before the stage's first shared-memory read (5 -> 4 a sub-chunk): y the same bits (the A/B says),
# the time of the late workloads, then the late Gluon tests with it on.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
timeout 170 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.COPY_AHEAD \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --rounds 5 --kernels > "$OUT/ab-copy-ahead.txt" 2>&1
timeout 100 python3 - > "$OUT/tests-copy-ahead.txt" 2>&1 <<'PY'
import sys
import pytest
import flashssm.ops.ssd.forward_gluon as g
g.COPY_AHEAD = True
sys.exit(pytest.main(["-q", "-x", "-m", "gpu", "-p", "no:cacheprovider", "-o", "addopts=", "tests/ops/test_ssd_forward.py",
                      "-k", "gluon_forward and late and not fp16 and not float16"]))
PY
echo "tests rc $?" >> "$OUT/tests-copy-ahead.txt"
tail -2 "$OUT"/tests-copy-ahead.txt; grep -v "Warn\|warn" "$OUT"/ab-copy-ahead.txt | tail -12
