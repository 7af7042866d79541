#!/usr/bin/env bash
# Eighty-second session, call 4 (call 3 again, its float64 references called directly: the public ops refuse float64): a GPU with less shared memory than Hopper's, emulated on the H200.
# benchmarks/other_gpus.py (offline, sm_89 and sm_80) found launches past a 99 KB block: the SSD paths launch at the
# 2.7B shape's training (128 KB at 3 stages on sm_89, 64 KB at 2), the fp32 chain launch at dstate 256 x headdim 128,
# and two launches holding a 128 KB fp32 state at that shape's training (not shrunk by stages). The fixes:
# `_runtime.cached_launch` takes a stage fewer where Triton refuses a launch for shared memory, and such training calls
# take the reference (`ssd.training_blocker`). Here: the mechanism on the real Triton 3.6 with the limit lowered (Triton
# checks the limit at a kernel's first launch in a process), the tests that hold it, and the host-bound calls timed
# against call 2's (the launch path's wrapper: predicted within the spread).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/small_shared_memory.py --limit-kb 99 --limit-kb 64 --limit-kb 40 > "$OUT/small-smem.txt" 2>&1
echo "rc $?" >> "$OUT/small-smem.txt"; cat "$OUT/small-smem.txt" | cut -c1-400
# (call 3 ran them: passed)
# timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_launch.py tests/ops/test_dispatch.py > "$OUT/tests.txt" 2>&1
# echo "tests rc $?"; tail -4 "$OUT/tests.txt"
# timeout 120 python3 -m flashssm bench -w 2.7b-1x2K -w train-2.7b-1x2K -w 2.7b-8x4K -i flashssm > "$OUT/bench.txt" 2>&1
# echo "bench rc $?"; grep -v -i warn "$OUT/bench.txt" | grep -E "^(flashssm|2.7b|train)" | cut -c1-160
