#!/usr/bin/env bash
# Seventieth session, call 10 (one H200, ~90 s): call 9 found the 1 x 2K training call's host time halved with the
# process on one core (the backward runs on autograd's device thread). The bench's call with the backward on the
# calling thread (torch.autograd.set_multithreading_enabled(False)) against the default, flashssm and mamba_ssm.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.:/tmp/site
timeout 150 python3 benchmarks/autograd_threads.py -w train-2.7b-1x2K -w train-2.7b-1x8K --rounds 5 \
  > "$OUT/threads.txt" 2>&1
grep -v "Warning\|warn_once" "$OUT/threads.txt" | tail -8
