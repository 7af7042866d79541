#!/usr/bin/env bash
# Sixty-seventh session, call 6 (< 400 s): TILE_STAGES 3 (the one-tile backward's rows pipelined; call 5) as the
# default, with STAGE_BYTES's cap: the norm, model and compile-ahead selections on the GPU; the backward cases at the
# defaults against TILE_STAGES=1; the training step, flashssm alone.
# Prediction from call 5: the step's block norm backward (17 launches) 571 -> ~360 us a launch: about -3.5 ms.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_norm.py \
  tests/models/test_models.py tests/test_compile_ahead.py -k "norm or add or autocast or train or generat" \
  > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; tail -2 "$OUT/tests.txt")
timeout 100 python3 benchmarks/time_norm_tiles.py --rounds 3 --cases bwd --variant TILE_STAGES=1 \
  --variant TILE_STAGES=3 > "$OUT/norm-stages.txt" 2>&1
echo "== norm stages rc $?"; grep -v -i warn "$OUT/norm-stages.txt" | tail -10
timeout 100 python3 -m flashssm profile --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 \
  --kernels flashssm --out /tmp/prof > "$OUT/profile.txt" 2>&1
echo "== profile rc $?"; grep "step" "$OUT/profile.txt" | tail -1
grep -E "^\| (GEMM|SSM scan|conv1d|norm|element-wise|other|\*\*total)" /tmp/prof/report.md | head -7
grep -E "rmsnorm" /tmp/prof/report.md | head -4 | cut -c1-150
cp /tmp/prof/report.md "$OUT/report.md"
