#!/usr/bin/env bash
# Sixty-seventh session, call 8 (< 250 s): mamba2.SPLIT_GRAD_SINK (in_proj's pieces' gradients written by the gated
# norm's and the conv's backward kernels into one buffer: no concatenation): its tests on the GPU, then the training
# profile off and on (separate processes). Prediction: the first split's cat, ~0.36 ms of the 0.27 ms-average Cat
# launches (its 10576 columns against the second split's 5376), 16 a step: about -5.5 ms.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 90 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_grad_sink.py \
  tests/models/test_models.py -k "sink or split" > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; tail -2 "$OUT/tests.txt")
for v in False True; do
  timeout 70 python3 benchmarks/with_switches.py flashssm.modules.mamba2.SPLIT_GRAD_SINK=$v -- profile \
    --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 --kernels flashssm --out /tmp/prof-$v \
    > "$OUT/profile-$v.txt" 2>&1
  echo "== profile $v rc $?"; grep "step" "$OUT/profile-$v.txt" | tail -1
  grep -E "^\| (GEMM|norm|conv1d|element-wise|\*\*total)" /tmp/prof-$v/report.md | head -5
  grep -E "Cat" /tmp/prof-$v/report.md | head -1 | cut -c1-120
  cp /tmp/prof-$v/report.md "$OUT/report-$v.md"
done
