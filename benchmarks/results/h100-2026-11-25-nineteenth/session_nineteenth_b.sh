#!/usr/bin/env bash
# Nineteenth session, second GPU call: the deterministic mode's buffers allocated without torch's NaN fill
# (_runtime.buffer): its tests on the GPU, the A/B against the fill in one process, the training bench with peers,
# and compute-sanitizer over the deterministic tiles (never sanitized before).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  tests/ops/test_selective_scan.py -k "deterministic or fills" 2>&1 | tee "$OUT/call2-tests.txt" \
  | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 150 python3 benchmarks/ab_deterministic.py --workloads 1x2048,8x4096,1x32768 --rounds 3 2>&1 | grep -v Warn \
  | tee "$OUT/call2-ab-det.txt"
timeout 150 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i flashssm-deterministic -i mamba_ssm 2>&1 | tee "$OUT/call2-bench.txt" | grep -E "^train|^flashssm|^mamba"
run="python3 benchmarks/sanitize.py --case ssd_deterministic_tiles --case ssd_deterministic --fuzz-cases 0"
FLASHSSM_POISON_OUTPUTS=1 timeout 100 $run 2>&1 | grep -v -i warn | tee "$OUT/call2-sanitize-plain.txt" | tail -3
for tool in memcheck racecheck; do
  FLASHSSM_POISON_OUTPUTS=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool $tool $run \
    > "$OUT/call2-sanitize-$tool.txt" 2>&1
  echo "$tool: exit $?; $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/call2-sanitize-$tool.txt" | tail -1)"
  grep -E "^case_|sanitize driver" "$OUT/call2-sanitize-$tool.txt"
done
