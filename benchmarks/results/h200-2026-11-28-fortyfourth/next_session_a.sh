#!/usr/bin/env bash
# Ready for the next session's first device call: what the forty-fourth session's device time did not reach.
# 1. The selective-scan test file on the GPU, with the final form of the channels-contiguous forward configuration
#    (test_gpu_channels_last_one_lane at 8 x (32 SMs + 40) channels has not run in that form).
# 2. The channels-contiguous configuration where it was not measured: 16x2K (takes it), and 4x8K / 2x16K (keep the
#    contiguous layout's pick) against one lane with late segments.
# 3. The whole Mamba-1 mixer (benchmarks/mixer1_tokens_layout.py) with the new configuration, against mamba_ssm's layout.
# 4. The backward in the mixer's layout (about 12 % slower than on contiguous inputs at 8x2K): its 4-lane programs
#    hold 8 channels, 16 bytes of a token's row, half a sector; wider programs (more warps, fewer lanes), as the
#    forward's one-lane 64-channel programs gained 12-19 %. (Offline, sm_90, channels last: 4 lanes with 2-8 warps
#    compile without spills; 2 lanes spill 204 bytes (timed anyway), 1 lane 612 (left out).)
# Two device calls (the limits add up past one call's 600 s): `bash next_session_a.sh 1` (1-2), then `... 2` (3-4).
set -uo pipefail
OUT=${OUT:-out}
PART=${1:-1}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT/a"
if [ "$PART" = 1 ]; then
timeout 300 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  tests/ops/test_selective_scan.py > "$OUT/a/tests-full.txt" 2>&1
echo "pytest rc $?"
grep -E "FAILED|ERROR|passed|failed" "$OUT/a/tests-full.txt" | tail -20 | tee "$OUT/a/tests.txt"
timeout 200 python3 benchmarks/ab_forward_configs.py --shape 16x2048-mixer --shape 4x8192-mixer \
  --shape 2x16384-mixer --config 1,8,2,64,512,late --config 1,8,1,32,512,late 2>&1 | grep -v -i warn \
  | tee "$OUT/a/ab-configs.txt"
else
timeout 150 python3 benchmarks/mixer1_tokens_layout.py --shape 8x2048 --shape 8x2047 2>&1 | grep -v -i warn \
  | tee "$OUT/a/mixer-tokens.txt"
M=m1train-2.8b-8x2K-mixer
timeout 240 python3 benchmarks/tune_selective_scan.py --backward \
  --configs "$M:4,32,1;$M:4,32,2;$M:4,32,4;$M:4,32,8;$M:2,32,1;$M:2,32,2" 2>&1 | grep -v -i warn \
  | tee "$OUT/a/tune-bwd-mixer.txt"
fi
