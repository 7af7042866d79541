#!/usr/bin/env bash
# Seventy-fourth session, call 3 (one H200). Call 2 found the Gluon chain launch correct but slower than the Triton one
# (8 x 4K 0.451 against 0.390 ms). Here: the carry's state tile a step ahead (H_AHEAD), A/B'd against loading it at
# its step; the Gluon launch against the Triton one again; both without the carry (CHAIN_CARRY off: the paths launch
# takes it), to see what the carry's load costs each. The Gluon chain's tests first.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 120 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/ops/test_ssd_backward.py -k "chain_gluon" > "$OUT/tests.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head -20; tail -1 "$OUT/tests.txt"
K="--kernel _chain_gluon_kernel --kernel _dstates_kernel --kernel _tiles_paths_kernel"
timeout 120 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.chain_gluon.H_AHEAD --value False --value True \
  --workload 8x4K --rounds 5 $K > "$OUT/ab-ahead.txt" 2>&1
grep -vi warn "$OUT/ab-ahead.txt" | tail -8
timeout 120 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.chain_gluon.ENABLED --value False --value True \
  --workload 8x4K --rounds 5 $K > "$OUT/ab-chain.txt" 2>&1
grep -vi warn "$OUT/ab-chain.txt" | tail -8
timeout 120 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.chain_gluon.ENABLED --value False --value True \
  --workload 8x4K --rounds 5 $K --set flashssm.ops.ssd.backward_chain.CHAIN_CARRY=False > "$OUT/ab-chain-nocarry.txt" 2>&1
grep -vi warn "$OUT/ab-chain-nocarry.txt" | tail -8
