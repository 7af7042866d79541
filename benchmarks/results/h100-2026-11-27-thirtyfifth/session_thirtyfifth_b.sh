#!/usr/bin/env bash
# Thirty-fifth session, call 2 (H100): (1) the paths launch with each head's dt and cs loaded during the head before
# (PATHS_AHEAD) against its own at its start, training calls at 8x4K and 1x32K, alternating; (2) a probe, timing
# only (the decay gradient is wrong with it): the paths launch without the carry <dH, H> (PROBE_CARRY, a temporary
# switch), what moving it elsewhere could gain; (3) the tests of the paths launch on the GPU.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_tiles.PATHS_AHEAD --rounds 5 \
  --kernel _tiles_paths_kernel 2>&1 | grep -v Warn | tee "$OUT/call2-ab-ahead.txt"
timeout 150 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_tiles.PROBE_CARRY --value True \
  --value False --rounds 3 --kernel _tiles_paths_kernel 2>&1 | grep -v Warn | tee "$OUT/call2-probe-carry.txt"
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py \
  -k "tiles or paths or deterministic or states" > "$OUT/call2-tests.txt" 2>&1
tail -5 "$OUT/call2-tests.txt"
