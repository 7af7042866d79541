#!/usr/bin/env bash
# Sixty-sixth session, call 4 (about 150 s): where the two-chain kernel's time goes against the one-chain kernel's
# (8x4K forward, Nsight Compute: speed of light, scheduler and warp state statistics, both on the same inputs).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/ncu"
export PYTHONPATH=$PWD
cat > /tmp/pair_one.py <<'PY'
import sys, torch, flashssm
from flashssm.ops.ssd import forward_gluon
from flashssm.bench.workloads import WORKLOADS
forward_gluon.PAIR = sys.argv[1] == "1"
w = WORKLOADS["2.7b-8x4K"]
inp = w.make_inputs("cuda")
for i in range(2):
    if i == 1:
        torch.cuda.synchronize(); torch.cuda.profiler.start()
    flashssm.ssd_scan(**inp, chunk_size=256)
    torch.cuda.synchronize()
torch.cuda.profiler.stop()
PY
for pair in 0 1; do
  timeout 120 ncu --profile-from-start off --clock-control none --kernel-name regex:gluon --section SpeedOfLight \
    --section SchedulerStats --section WarpStateStats --section Occupancy \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" python3 /tmp/pair_one.py $pair \
    > "$OUT/ncu/pair-$pair.txt" 2>&1
  echo "== pair $pair rc $?"
  grep -E "Duration|Throughput|Issue|Eligible|Warp Cycles|No Eligible|Achieved Occ|issue_stalled" "$OUT/ncu/pair-$pair.txt" \
    | sed 's/  */ /g; s/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | awk '$NF+0 >= 0.02 || !/ratio/' | head -45
done
