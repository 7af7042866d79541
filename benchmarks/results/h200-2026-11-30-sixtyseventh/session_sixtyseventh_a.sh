#!/usr/bin/env bash
# Sixty-seventh session, call 1 (< 600 s): the norm kernels' new arguments on the GPU for the first time (add_rmsnorm,
# the fused block, out_dtype), then LOAD_VECTOR 0 against 4 at the 2.7B step's norm shapes (time_norm_vec.py: the
# layout conversions through shared memory found offline), then the training profile with FUSED_ADD_NORM off and on
# (the sixty-sixth session's prediction: about -5 ms of a 373 ms step).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > "$OUT/gpu.txt" 2>&1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 170 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_norm.py \
  tests/models/test_models.py tests/test_compile_ahead.py -k "norm or add or autocast" \
  > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; tail -3 "$OUT/tests.txt")
SECONDS=0
# (time_norm_vec.py was then extended into time_norm_tiles.py, which call 2 ran)
timeout 100 python3 benchmarks/time_norm_vec.py --values 0 4 --rounds 3 > "$OUT/norm-vec.txt" 2>&1
echo "== norm vec rc $? (${SECONDS} s)"; grep -v -i warn "$OUT/norm-vec.txt" | tail -14
for v in False True; do
  SECONDS=0
  timeout 140 python3 benchmarks/with_switches.py flashssm.modules.block.FUSED_ADD_NORM=$v -- profile \
    --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 --kernels flashssm --out "$OUT/profile-$v" \
    > "$OUT/profile-$v.txt" 2>&1
  echo "== profile $v rc $? (${SECONDS} s)"; grep "step" "$OUT/profile-$v.txt" | tail -1
  grep -E "^\| (GEMM|norm|element-wise|other|\*\*total)" "$OUT/profile-$v/report.md" | head -6
  rm -f "$OUT/profile-$v"/*.png
done
