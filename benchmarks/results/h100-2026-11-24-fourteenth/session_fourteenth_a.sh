#!/usr/bin/env bash
# Fourteenth session, first GPU call: the chain launch in spans (a program sweeps G chunks backwards and hands over
# once) against a program a chunk (c0), per kernel; then the backward's GPU tests (the span form forced too) and the
# chain launch's DRAM traffic in the span form.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
timeout 240 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096 --opts none,dz --profile \
  --variants tiles:c0,tiles,tiles:c2,tiles:c4,tiles:c4:d128,tiles:c8:d128,tiles:c8:d32 2>&1 | grep -v -i warn \
  | tee "$OUT/ab-spans.txt"
timeout 100 python3 benchmarks/ab_tiles.py 3 --shapes 1x32768 --opts none --profile --variants tiles:c0,tiles \
  2>&1 | grep -v -i warn | tee -a "$OUT/ab-spans.txt"
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -6
cat > /tmp/one_backward.py <<PY
import torch, flashssm
from flashssm.bench.workloads import WORKLOADS
inp = WORKLOADS["train-2.7b-8x4K"].make_inputs("cuda")
dy = inp.pop("dy")
leaves = {k: (v.detach().requires_grad_() if torch.is_tensor(v) and v.is_floating_point() else v) for k, v in inp.items()}
for _ in range(2):
    y = flashssm.ssd_scan(**leaves, chunk_size=256)
    y.backward(dy)
    torch.cuda.synchronize()
PY
timeout 120 ncu --clock-control none --kernel-name regex:_dstates_kernel --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
  python3 /tmp/one_backward.py > "$OUT/ncu-dstates.txt" 2>&1
grep -E "Duration|DRAM Throughput|L2 Hit|Memory Throughput|Registers Per|Achieved Occ|Grid Size" "$OUT/ncu-dstates.txt"
