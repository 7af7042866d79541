#!/usr/bin/env bash
# Fifty-second session, call 3 (about 450 s): (1) the two fixes of call 2's failures (a keyless Recording under
# torch.compile; a replay's locals holding tensors past their last use) and the selective scan's training replay, on
# the GPU: test_prepared (its GPU memory test among them), the models' compile test, the selective scan's gradient
# tests; (2) the training replay's host time (ab_scan_host.py --op scan-train, the 130M and 2.8B widths); (3) a minute
# of fuzz over the two scans (a repeated training call's gradient bits, both scans).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 230 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 12 \
  tests/test_prepared.py tests/models/test_models.py tests/ops/test_selective_scan.py \
  -k "prepared or replay or recorded or recording or compile or grad or backward or training" \
  > "$OUT/c/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/c/tests.txt" | tail -8
timeout 150 python3 benchmarks/ab_scan_host.py --op scan-train --dim 1536 --seqlen 2048 --seqlen 512 --rounds 5 \
  --calls 100 > "$OUT/c/ab-scan-train-130m.txt" 2>&1
echo "ab rc $?"; cat "$OUT/c/ab-scan-train-130m.txt"
timeout 90 python3 benchmarks/ab_scan_host.py --op scan-train --dim 5120 --seqlen 1024 --rounds 5 --calls 100 \
  > "$OUT/c/ab-scan-train-2.8b.txt" 2>&1
echo "ab rc $?"; cat "$OUT/c/ab-scan-train-2.8b.txt"
timeout 80 python3 -m tests.fuzz.fuzz --seed 54 --budget 60 --ops selective_scan,ssd_scan > "$OUT/c/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -3 "$OUT/c/fuzz.txt"
