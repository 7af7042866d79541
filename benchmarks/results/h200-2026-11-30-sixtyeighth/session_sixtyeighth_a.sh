#!/usr/bin/env bash
# Sixty-eighth session, call 1: the sixty-seventh session's next_session_a.sh as prepared (it was not run there; < 200 s).
# call 8's GPU test compared the model's gradients bit for bit, which the kernels' variants for the slab's strides do
# not give (the loss was equal); it now asks fp32's rounding on the GPU: run it. Then the 2.7B training step off / on /
# off / on in separate processes, 7 timed steps each (the wall is their median; GPU busy from the profiled step):
# call 8 had the Cat launches 8.64 -> 2.79 ms and GPU busy -9.4 ms, but the wall 358.7 -> 359.6 ms. If the wall
# again does not follow, look for what the host waits on in the backward (a trace's cudaStreamSynchronize /
# pageable copies) before turning the switch on. The tests also compile a block with the fused add + norm under
# Inductor (new, CPU-run only with the references: add_rmsnorm's autograd Function has not met torch.compile yet).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 40 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/models/test_models.py \
  tests/ops/test_grad_sink.py -k "sink or fused_add_norm_compiles" > "$OUT/tests.txt" 2>&1; echo "== tests rc $?"; \
  tail -1 "$OUT/tests.txt")
for v in False True False True; do
  timeout 40 python3 benchmarks/with_switches.py flashssm.modules.mamba2.SPLIT_GRAD_SINK=$v -- profile \
    --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 --kernels flashssm --repeat 7 \
    --out /tmp/prof-$v > "$OUT/profile-$v.txt" 2>&1
  echo "== profile $v rc $?"; grep "step" "$OUT/profile-$v.txt" | tail -1
  grep -E "^\| (element-wise|\*\*total)" /tmp/prof-$v/report.md | head -2
done
