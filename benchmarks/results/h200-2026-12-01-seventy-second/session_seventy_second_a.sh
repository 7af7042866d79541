#!/usr/bin/env bash
# Run by the seventy-second session as its first call (prepared by the seventy-first as next_session_a.sh). One H200, ~480 s; no wheels needed.
# (1) The GPU tests of what the session changed on the CPU alone: conv1d's and the gated norm's placeholders (now an
# input's pointer), the conv's forms under torch.compile (test_conv1d_under_torch_compile: reference, custom op, traced
# kernels; the custom ops' fakes in test_custom_op_layouts), the models' compile tests, test_prepared (the fp16 replay
# test's dB/dC tolerance). (2) The 130M Mamba-2 model's training step through torch.compile with the conv as its
# custom op (the norms' too): losses as eager's? the step's time (call 3 of the seventy-first: NaN with the kernels
# traced). next_session_b.sh times the reference form beside it; if the custom ops train as eager and are faster, make
# them the default. next_session_b.sh and _c.sh: why the traced kernels went wrong; what keeps reduce-overhead off.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 280 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/ops/test_conv1d.py tests/ops/test_norm.py tests/ops/test_compile_aliasing.py tests/models \
  tests/ops/test_custom_op_layouts.py tests/test_prepared.py tests/test_launch.py > "$OUT/tests.txt" 2>&1
timeout 170 python3 benchmarks/model_step_compiled.py --preset mamba2-130m --shape 1x512 --mode eager \
  --mode default --steps 20 --conv-form custom_op --norm-form custom_op > "$OUT/compiled-mamba2-custom_op.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head; tail -1 "$OUT/tests.txt"
grep -hE "step|failed" "$OUT"/compiled-mamba2-*.txt | grep -v "^ *File\|Warn" | tail -6
