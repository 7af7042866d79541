#!/usr/bin/env bash
# Thirty-ninth session, call 1 (carry .whl): packed sequences' chain launch in spans (CHAIN_SPANS_PACKED) and with it
# the tiles in chunks of 128. (1) the GPU tests of the paths touched (packed, varlen, chain forms, stored states);
# (2) packed against dense, the switch on then off, in one process each (benchmarks/packed_vs_dense.py); (3) the
# packed bench workloads against mamba_ssm (seq_idx) and fla (cu_seqlens), never run on a GPU before.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 150 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  tests/ops/test_ssd_backward.py -k "packed or varlen or chain or sweep_states or entering_states or smaller_chunks \
  or in_place" > "$OUT/call1-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed" "$OUT/call1-tests.txt" | head -20
for value in True False; do
  timeout 100 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --ssd 64x512 --scan none --rounds 5 \
    --set flashssm.ops.ssd.backward_chain.CHAIN_SPANS_PACKED=$value > "$OUT/call1-packed-$value.txt" 2>&1
  grep -v -i warn "$OUT/call1-packed-$value.txt" | grep -v lengths
done
timeout 170 python3 -m flashssm bench -w 2.7b-packed-8x4K -w train-2.7b-packed-8x4K -w train-2.7b-packed-64x512 \
  -i flashssm -i mamba_ssm -i fla -i flashssm-deterministic --json "$OUT/call1-bench-packed.json" \
  > "$OUT/call1-bench-packed.txt" 2>&1
grep -v -i warn "$OUT/call1-bench-packed.txt" | tail -40
