#!/usr/bin/env bash
# Sixty-sixth session, call 8 (about 300 s; carry .whl): the gated norm's backward with one row a program (the new
# table) against mamba_ssm's, programs a SM swept; the norm's GPU tests; the model profile of call 6 again with it.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
timeout 100 python3 benchmarks/tune_rmsnorm_bwd.py --blocks 1,1024,8 --blocks 1,2048,8 --blocks 1,1024,4 \
  --blocks 2,1024,4 --splits 2,8 > "$OUT/tune-norm-bwd.txt" 2>&1
echo "== tune rc $?"; grep -v -i warn "$OUT/tune-norm-bwd.txt" | tail -16
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 120 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_norm.py \
  > "$OUT/tests-norm.txt" 2>&1; echo "== tests norm rc $?"; tail -3 "$OUT/tests-norm.txt")
timeout 200 python3 -m flashssm profile --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 \
  --compare flashssm mamba_ssm --out "$OUT/profile" > "$OUT/profile.txt" 2>&1
echo "== profile rc $?"; grep -v -i warn "$OUT/profile.txt" | tail -4
grep -E "^\| (GEMM|SSM scan|conv1d|norm|element-wise|other|\*\*total)" "$OUT/profile/report.md" | head -8
grep -E "rmsnorm_bwd|layer_norm_bwd" "$OUT/profile/report.md" | head -4
