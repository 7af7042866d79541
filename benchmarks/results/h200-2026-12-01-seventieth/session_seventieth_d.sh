#!/usr/bin/env bash
# Seventieth session, call 4 (one H200, ~150 s): where a 1 x 2K training call's host time goes now (issue 4's 5x there
# is host-bound: 1.002 ms against mamba_ssm's 4.164 in the sixty-fourth session's bench), and the bench's row with
# mamba_ssm in the same run.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.:/tmp/site
timeout 150 python3 benchmarks/host_overhead.py -w train-2.7b-1x2K -w 2.7b-1x2K --profile 200 > "$OUT/host.txt" 2>&1
head -4 "$OUT/host.txt"
timeout 150 python3 -m flashssm bench -w train-2.7b-1x2K -w 2.7b-1x2K -i flashssm -i mamba_ssm > "$OUT/bench.txt" 2>&1
grep -E "^(flashssm|mamba_ssm) |train|2.7b" "$OUT/bench.txt" | head -12
