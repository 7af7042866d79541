#!/usr/bin/env bash
# Prepared by the sixty-sixth session, not run (its device time was spent): block.FUSED_ADD_NORM (the residual add
# inside the blocks' RMSNorm, `add_rmsnorm`; CPU-tested) on the GPU. Its tests, the kernel against the composition
# at the 2.7B block norm's shape, then call 9's training profile (flashssm alone) off, on, off, on in separate
# processes. Prediction (benchmarks/notes/profile.md, sixty-sixth session): about -5 ms of a 373 ms step (the
# element-wise class -10, the norm class +5).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_norm.py \
  tests/models/test_models.py tests/test_compile_ahead.py -k "add_rmsnorm or fused_add_norm or autocast" \
  > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; tail -2 "$OUT/tests.txt")
timeout 60 python3 - > "$OUT/kernel.txt" 2>&1 <<'PY'
import torch, flashssm
from triton.testing import do_bench
from flashssm.ops.norm import add_rmsnorm
h = torch.randn(32768, 2560, device="cuda", dtype=torch.bfloat16, requires_grad=True)
r = torch.randn(32768, 2560, device="cuda", requires_grad=True)
w = torch.randn(2560, device="cuda", requires_grad=True)
dy, ds = torch.randn_like(h), torch.randn_like(r)
def fused():
    y, s = add_rmsnorm(h, r, w, eps=1e-5, out_dtype=torch.bfloat16)
    return torch.autograd.grad([y, s], [h, r, w], [dy, ds])
def apart():
    s = h + r
    y = flashssm.rmsnorm_gated(s, w, eps=1e-5, out_dtype=torch.bfloat16)
    return torch.autograd.grad([y, s], [h, r, w], [dy, ds])
for name, fn in (("apart", apart), ("fused", fused), ("apart", apart), ("fused", fused)):
    print(name, f"{do_bench(fn, warmup=25, rep=200, return_mode='median') * 1e3:.1f} us forward + backward", flush=True)
PY
echo "== kernel rc $?"; tail -4 "$OUT/kernel.txt"
for v in False True False True; do
  timeout 150 python3 benchmarks/with_switches.py flashssm.modules.block.FUSED_ADD_NORM=$v -- profile \
    --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 --kernels flashssm --out "$OUT/profile-$v" \
    > "$OUT/profile-$v.txt" 2>&1
  echo "== profile $v rc $?"; grep "step" "$OUT/profile-$v.txt" | tail -1
  grep -E "^\| (norm|element-wise|\*\*total)" "$OUT/profile-$v/report.md" | head -3
done
# the block norm's mixed-dtype backward (x fp32, dy bf16): 32 warps (no layout conversion, offline) at two programs a SM
timeout 60 python3 benchmarks/time_norm_mixed.py > "$OUT/norm-mixed.txt" 2>&1
echo "== norm mixed rc $?"; grep -v -i warn "$OUT/norm-mixed.txt" | tail -10
