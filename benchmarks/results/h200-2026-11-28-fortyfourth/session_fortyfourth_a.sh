#!/usr/bin/env bash
# Forty-fourth session, call 1: the forty-third session's next_session_a.sh, reordered so that the tests run first
# (correctness before the profile), the profile's calls capped at 90 s each.
# 1. Why the scan's backward with channels-contiguous inputs is 0.82x with outputs in u's layout (7.51 -> 6.18 ms at
#    8 x 2048): Nsight Compute's DRAM and L2 write traffic, and instructions, on the backward kernel in both output
#    layouts (OUTPUTS_LIKE_U), one launch each after a warm-up.
# 2. The Mamba-1 mixer at a batch-1 odd length (1 x 16383 prefill), which did not finish its first compile in call 4.
# 3. The bench's Mamba-1 workloads in the mixer's layout next to their contiguous twins (added after the device calls).
# 4. The whole selective-scan test file on the GPU after the session's changes.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT/a"
timeout 300 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=line -n 14 \
  tests/ops/test_selective_scan.py > "$OUT/a/tests-full.txt" 2>&1
echo "pytest rc $?"
grep -E "FAILED|ERROR|^E |passed|failed| Error" "$OUT/a/tests-full.txt" | grep -v "PASSED" | tail -40 | tee "$OUT/a/tests.txt"
timeout 150 python3 -m flashssm bench -w m1-2.8b-8x2K -w m1-2.8b-8x2K-mixer -w m1train-2.8b-8x2K \
  -w m1train-2.8b-8x2K-mixer -i flashssm 2>&1 | grep -v -i warn | tee "$OUT/a/bench-mixer-layout.txt"
cat > /tmp/one_bwd.py <<'PY'
import os
import torch
import flashssm
from flashssm.bench.workloads import ScanWorkload
from flashssm.ops.selective_scan import scan
scan.OUTPUTS_LIKE_U = os.environ["LIKE_U"] == "1"
kw = dict(ScanWorkload("cl", 8, 2048).make_inputs("cuda"), delta_softplus=True)
for k in ("u", "delta", "z"):
    kw[k] = kw[k].transpose(1, 2).contiguous().transpose(1, 2).requires_grad_()
dy = torch.randn_like(kw["u"])
for _ in range(2):
    flashssm.selective_scan(**kw).backward(dy)
    torch.cuda.synchronize()
PY
for like in 1 0; do
  LIKE_U=$like timeout 90 ncu --clock-control none --kernel-name regex:_scan_bwd_kernel --launch-skip 1 \
    --launch-count 1 --metrics gpu__time_duration.sum,dram__bytes_write.sum,dram__bytes_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum \
    python3 /tmp/one_bwd.py > "$OUT/a/ncu-bwd-like$like.txt" 2>&1
  echo "outputs like u: $like"; grep -E "duration|bytes|sectors|inst_executed|op_st" "$OUT/a/ncu-bwd-like$like.txt"
done | tee "$OUT/a/ncu-bwd.txt"
timeout 120 python3 benchmarks/mixer1_layout.py --shape 1x16383 --forward-only --rounds 2 2>&1 | grep -v -i warn \
  | tee "$OUT/a/mixer-16383.txt"
