#!/usr/bin/env bash
# Prepared by the eighty-first session, run as the eighty-second session's first call.
# The spacing of the states the forward keeps for the backward (BackwardConfig.chunk), last swept on the H100's v2
# backward (chunks of 16, 32, 64 within 4 %; 16 the fastest by 0.3 %). The backward's pass 1 recomputes the states
# through all but the last tile of a chunk: 3 of 4 tiles at 32, 1 of 2 at 16, 7 of 8 at 64; 16 doubles the stored
# states (+168 MB at 8x2K, written and read).
# Forward + backward and backward alone (the tuner's difference), 8x2K, each chunk twice, interleaved.
# Prediction (offline, sm_90, Triton 3.6, `offline_selective_scan.py bwd --lanes 4 --chunk C --loops`): pass 1's
# loop 292 instructions a tile, pass 2's 1351-1362; a tile's share, the chunk's overhead included, ~1617 at 32 and
# ~1558 at 16 (-3.6 %). Against that, 16 reads and writes another 168 MB of states (~0.04 ms each way at
# 4.24 TB/s, ~2 % of a training call) and raises a training call's peak by as much (817 -> ~985 MiB, mamba_ssm 808):
# worth it only if 16 gains more than ~3 % of the call.
# Also two register caps again (the twenty-third session's, before the shared per-token work: 224 +7 %, 200 +13 %,
# 184 +22 %): offline now, 168 registers spill 184 B (13 local loads in pass 2's loop a tile, 37 in the chunk loop),
# for 12 warps an SM instead of 8; predicted slower, as then.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
W=m1train-2.8b-8x2K
timeout 210 python3 benchmarks/tune_selective_scan.py --backward \
  --configs "$W:4,32,1;$W:4,16,1;$W:4,64,1;$W:4,32,1,8,200;$W:4,32,1,8,168;$W:4,32,1;$W:4,16,1;$W:4,64,1" \
  > "$OUT/tune-chunk.txt" 2>&1
echo "rc $?" >> "$OUT/tune-chunk.txt"
tail -12 "$OUT/tune-chunk.txt"
# 2. The new bench workload m1-2.8b-1x256K (issue 5's third forward shape; its float64 reference in pieces of 16K
#    tokens, CPU-tested only): its first GPU run, flashssm alone (mamba_ssm's CUDA scan needs its build, ~2 min; the
#    tuner's last figure at that length was the H100's 18.15 ms, 4.99x its floor).
timeout 200 python3 -m flashssm bench -w m1-2.8b-1x256K -i flashssm > "$OUT/bench-1x256K.txt" 2>&1
echo "bench rc $?" >> "$OUT/bench-1x256K.txt"
tail -6 "$OUT/bench-1x256K.txt"
