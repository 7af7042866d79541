#!/usr/bin/env bash
# Seventy-fourth session, call 1 (one H200). The Gluon chain launch (flashssm/ops/ssd/chain_gluon.py): its GPU tests
# and the chain tests beside it, then its A/B over the training call (the switch chain_gluon.ENABLED, alternating in
# one process, the kernels' times by the profiler) at 8 x 4K and 32 x 2K (late spans: it serves them) and 8 x 4K with
# D, dt_bias and softplus (D's share keeps the Triton chain: the two values run the same code there).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/ops/test_ssd_backward.py -k "chain_gluon or chain_carry or layer_call or deterministic_repeats" \
  > "$OUT/tests.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head -20; tail -1 "$OUT/tests.txt"
timeout 240 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.chain_gluon.ENABLED --value False --value True \
  --workload 8x4K --workload 32x2K --rounds 5 > "$OUT/ab-chain.txt" 2>&1
tail -30 "$OUT/ab-chain.txt"
timeout 100 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.chain_gluon.ENABLED --value False --value True \
  --workload 8x4K --options --rounds 3 > "$OUT/ab-chain-options.txt" 2>&1
tail -12 "$OUT/ab-chain-options.txt"
