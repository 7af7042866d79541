#!/usr/bin/env bash
# Sixty-eighth session, call 6: forward_gluon.TMA_STATES (with TMA: the training forward's entering states stored
# from H_sm by TMA stores instead of 16-byte stores from registers; offline the training form's loop 1014 -> 974
# instructions, no barrier added). (1) The TMA tests (the same bits with both on); (2) the training call 8 x 4K:
# cp.async against TMA loads and stores, and TMA loads alone against loads and stores; the forward kernel's time from
# the profiler.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 120 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short \
  -n 14 tests/ops/test_ssd_forward.py -k "tma" > "$OUT/tests.txt" 2>&1; echo "== tests rc $?";
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.txt" | tail -8)
export PYTHONPATH=$PWD
G=flashssm.ops.ssd.forward_gluon
timeout 100 python3 benchmarks/ab_train_flag.py $G.TMA --set $G.TMA_STATES=True --workload 8x4K --rounds 3 \
  --kernel _ssd_fwd_gluon_kernel > "$OUT/ab-both.txt" 2>&1
echo "== ab both rc $?"; grep -v -i warn "$OUT/ab-both.txt" | tail -8
timeout 100 python3 benchmarks/ab_train_flag.py $G.TMA_STATES --set $G.TMA=True --workload 8x4K --rounds 3 \
  --kernel _ssd_fwd_gluon_kernel > "$OUT/ab-states.txt" 2>&1
echo "== ab states rc $?"; grep -v -i warn "$OUT/ab-states.txt" | tail -8
