#!/usr/bin/env bash
# Seventy-first session, call 2 (one H200; carry [".whl"]): (1) the fp16 replay test's failure of call 1: how often
# and by how much the replayed call's gradients differ from the whole path's and from a second replay, with
# FEWER_TORCH_CALLS on and off (flake_probe.py); (2) the sweeps against the tiles where a small training call's
# backward runs the sweeps (TILES_MIN_WAVES 8: sweeps at 1 x 2K; 0: tiles everywhere), the call and its kernels; (3) a
# model's training step with the backward on the calling thread (call 1 named a preset that does not exist).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.:/tmp/site
timeout 120 python3 benchmarks/results/h200-2026-12-01-seventy-first/flake_probe.py 20 > "$OUT/flake-probe.txt" 2>&1
timeout 200 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.TILES_MIN_WAVES --value 8 --value 0 \
  --workload 1x2K --workload 2x2K --workload 1x4K --rounds 5 > "$OUT/ab-tiles-small.txt" 2>&1
timeout 200 python3 benchmarks/model_step_threads.py --preset mamba2-130m --preset mamba1-130m \
  --shape 1x512 --shape 4x2048 --rounds 3 > "$OUT/model-threads.txt" 2>&1
grep -v "Warn\|warn" "$OUT/flake-probe.txt" | tail -24
grep -v "Warn\|warn" "$OUT/ab-tiles-small.txt" | tail -40
grep -v "Warning\|warn_once" "$OUT/model-threads.txt" | tail -14
