#!/usr/bin/env bash
# Seventy-second session, eighth call. One H200, ~300 s; carries .whl (mamba_ssm). `flashssm bench model` with the
# new flashssm-graphs form (the model through torch.compile's CUDA graphs): the 130M model's 1 x 512 training step
# (host-bound) and the 370M model's 8 x 2K, against plain flashssm and mamba_ssm in the same run; then the model
# bench's test and the GPU tests of the last commits' files not yet run there (tests/bench/test_bench.py -k model).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.:/tmp/site
timeout 300 python3 -m flashssm bench model -s train-130m-1x512 -s train-370m-8x2K -i flashssm -i flashssm-graphs \
  -i mamba_ssm --repeat 10 --json "$OUT/model.json" > "$OUT/model.txt" 2>&1
timeout 120 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short \
  tests/bench/test_bench.py -k "model_bench" > "$OUT/tests.txt" 2>&1
grep -v Warn "$OUT/model.txt" | tail -12; tail -1 "$OUT/tests.txt"
