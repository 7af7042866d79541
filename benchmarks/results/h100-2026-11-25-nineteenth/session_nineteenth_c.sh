#!/usr/bin/env bash
# Nineteenth session, third GPU call: mamba_ssm's CUDA selective scan built from its sdist on the GPU machine
# (sm_90, real weights: benchmarks/build_mamba_selective_scan.py), then the Mamba-1 workloads with it as a peer.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
(nvcc --version | tail -2; nproc) > "$OUT/call3-env.txt" 2>&1
start=$SECONDS
timeout 430 python3 benchmarks/build_mamba_selective_scan.py --build /tmp/sscuda > "$OUT/call3-build.txt" 2>&1
echo "build: exit $? after $((SECONDS - start)) s" | tee -a "$OUT/call3-build.txt"
tail -5 "$OUT/call3-build.txt"
if ls /tmp/sscuda/selective_scan_cuda*.so > /dev/null 2>&1; then
  export PYTHONPATH=/tmp/sscuda:$PYTHONPATH
  timeout 300 python3 -m flashssm bench -w m1-2.8b-8x2K -w m1-2.8b-1x32K -w m1-n128-8x2K -w m1-130m-1x32K \
    -w m1train-2.8b-8x2K -w m1train-130m-1x8K -w m1train-n128-1x1K \
    -i flashssm -i mamba_ssm 2>&1 | tee "$OUT/call3-bench-m1.txt" | grep -E "^m1|^flashssm|^mamba"
fi
