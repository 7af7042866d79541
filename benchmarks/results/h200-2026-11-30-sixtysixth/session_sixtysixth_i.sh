#!/usr/bin/env bash
# Sixty-sixth session, call 9 (about 200 s): the models' RMSNorms writing autocast's dtype (no cast launches): the
# norm and model tests on the GPU, then call 8's training profile for flashssm alone (its step against call 8's).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_norm.py \
  tests/models/test_models.py -k "norm or autocast or training or kernels_in_model" > "$OUT/tests.txt" 2>&1; \
  echo "== tests rc $?"; tail -3 "$OUT/tests.txt")
timeout 200 python3 -m flashssm profile --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 \
  --kernels flashssm --out "$OUT/profile" > "$OUT/profile.txt" 2>&1
echo "== profile rc $?"; grep -v -i warn "$OUT/profile.txt" | tail -3
grep -E "^\| (GEMM|SSM scan|conv1d|norm|element-wise|other|\*\*total)" "$OUT/profile/report.md" | head -8
grep -E "elementwise|Cat" "$OUT/profile/report.md" | head -8 | cut -c1-160
