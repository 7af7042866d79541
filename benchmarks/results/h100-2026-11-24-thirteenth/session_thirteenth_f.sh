#!/usr/bin/env bash
# Thirteenth session, sixth GPU call: L2 eviction hints in the chain launch (its hand-over slots went to DRAM: 1.13 GB
# moved for ~0.5 GB of inputs and outputs), against the previous commit (carry build/base); the tiles kernel's stages.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
for i in 1 2; do
  PYTHONPATH=$PWD/build/base:$PWD timeout 100 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096,1x32768 2>&1 \
    | grep -v -i warn | grep " all:" | sed 's/^/base /' | tee -a "$OUT/costs.txt"
  PYTHONPATH=$PWD timeout 100 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096,1x32768 2>&1 \
    | grep -v -i warn | grep " all:" | sed 's/^/new  /' | tee -a "$OUT/costs.txt"
done
export PYTHONPATH=$PWD
timeout 200 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096 --opts none --profile --variants tiles,tiles:s2,tiles:s3 \
  2>&1 | grep -v -i warn | tee "$OUT/ab-stages.txt"
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
ncu --clock-control none --kernel-name regex:_dstates_kernel --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis python3 /tmp/one_backward.py > "$OUT/ncu-dstates.txt" 2>&1
grep -E "Duration|DRAM Throughput|L2 Hit|Memory Throughput" "$OUT/ncu-dstates.txt"
