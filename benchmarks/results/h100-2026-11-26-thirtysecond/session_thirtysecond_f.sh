#!/usr/bin/env bash
# Thirty-second session, call 6 (H100, carry .whl): (1) the SSD backward test file on the GPU (every `full` case; the
# ROUND-sweeps case's new bound); the forward file's new span-rule test; (2) the 1x2K forward (host-bound) with the
# cached pick_config, with mamba_ssm in the same run, 1x2K timed first (the peers' warm-up) and twice more.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONUNBUFFERED=1
timeout 330 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider tests/ops/test_ssd_backward.py \
  2>&1 | tail -6 | tee "$OUT/call6-tests-bwd.txt"
timeout 60 env PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider tests/ops/test_ssd_forward.py -k "span_rule or public_path" \
  2>&1 | tail -3 | tee "$OUT/call6-tests-fwd.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
timeout 150 python3 -m flashssm bench --json "$OUT/call6-bench.json" -w 2.7b-1x2K -w 2.7b-1x2K -w 2.7b-8x4K \
  -w 2.7b-1x2K -i flashssm -i mamba_ssm > "$OUT/call6-bench.txt" 2>&1
grep -E "^device|^ceil|^2.7b|^flashssm|^mamba" "$OUT/call6-bench.txt"
