#!/usr/bin/env bash
# Seventy-fifth session, call 1: compute-sanitizer (memcheck, racecheck, synccheck) over every kernel, the driver's
# cases extended to the paths added since its last full run (2026-11-22): the Gluon forward's late, early, fp16 and
# packed forms with TMA loads and stores, the tiles backward, the chain in spans and halves, prepared replays,
# the selective scan's mixer layout, short packed rows, segments and dstate 128. Run from the repository root:
#   bash benchmarks/results/h200-2026-12-01-seventy-fifth/session_seventy_fifth_a.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{
  nvidia-smi -L
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  compute-sanitizer --version | tail -2
} > "$OUT/env.txt" 2>&1
OUT="$OUT" PARALLEL=1 FUZZ_CASES=8 PLAIN_TIMEOUT=200 SANITIZE_TIMEOUT=330 bash benchmarks/sanitize.sh
cat "$OUT/env.txt"
grep -A40 "^kernels launched" "$OUT/sanitize-plain.txt" || true
