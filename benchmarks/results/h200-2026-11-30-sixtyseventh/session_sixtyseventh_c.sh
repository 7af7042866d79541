#!/usr/bin/env bash
# Sixty-seventh session, call 3 (< 500 s; carry .whl): the tree with the norm rules (load_vector, split_tile) and
# FUSED_ADD_NORM on in training: the norm, model and compile-ahead tests on the GPU; the README's training profile
# against mamba_ssm; then flashssm alone with FUSED_ADD_NORM off and on again (separate processes).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_norm.py \
  tests/models tests/test_compile_ahead.py > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; tail -3 "$OUT/tests.txt")
SECONDS=0
timeout 200 python3 -m flashssm profile --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 \
  --compare flashssm mamba_ssm --out "$OUT/profile" > "$OUT/profile.txt" 2>&1
echo "== profile rc $? (${SECONDS} s)"; grep -v -i warn "$OUT/profile.txt" | tail -3
grep -E "^\| (GEMM|SSM scan|conv1d|norm|element-wise|other|\*\*total)" "$OUT/profile/report.md" | head -8
grep -E "rmsnorm|layer_norm" "$OUT/profile/report.md" | head -8 | cut -c1-150
rm -f "$OUT"/profile/*.png "$OUT"/profile/trace-*.json "$OUT"/profile/summary.json
for v in False True; do
  timeout 100 python3 benchmarks/with_switches.py flashssm.modules.block.FUSED_ADD_NORM=$v -- profile \
    --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 --kernels flashssm --out /tmp/prof-$v \
    > "$OUT/profile-$v.txt" 2>&1
  echo "== profile $v rc $?"; grep "step" "$OUT/profile-$v.txt" | tail -1
  grep -E "^\| (norm|element-wise|\*\*total)" /tmp/prof-$v/report.md | head -3
  cp /tmp/prof-$v/report.md "$OUT/report-$v.md"
done
