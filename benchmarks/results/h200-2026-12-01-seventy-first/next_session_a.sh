#!/usr/bin/env bash
# Prepared by the seventy-first session, not run (its device time was spent). One H200, ~500 s; no wheels needed.
# (1) The GPU tests of what the session changed on the CPU alone: conv1d's and the gated norm's placeholders (now an
# input's pointer), the conv traced as its reference under torch.compile (test_conv1d_under_torch_compile, both forms
# on the GPU), the models' compile tests, test_prepared (the fp16 replay test's dB/dC tolerance). (2) The 130M Mamba-2
# model's training step through torch.compile with the reference conv: losses as eager's? its step time against
# eager's (call 3 of the seventy-first: NaN with the kernels traced). (3) Why the traced kernels went wrong:
# compile_mixer_check.py (the conv alone with autocast's dtypes and the mixer's gradient layout; one mixer under
# autocast with the kernel traced, COMPILE_KERNEL on, and with the reference).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/ops/test_conv1d.py tests/ops/test_norm.py tests/ops/test_compile_aliasing.py tests/models \
  tests/test_prepared.py > "$OUT/tests.txt" 2>&1
timeout 170 python3 benchmarks/model_step_compiled.py --preset mamba2-130m --shape 1x512 --mode eager \
  --mode default --steps 20 > "$OUT/compiled-mamba2.txt" 2>&1
timeout 120 python3 benchmarks/compile_mixer_check.py --traced-kernel > "$OUT/mixer-check.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head; tail -1 "$OUT/tests.txt"
grep -E "step|failed" "$OUT/compiled-mamba2.txt" | grep -v "^ *File\|Warn" | tail -4
grep -E "^conv|^mixer" "$OUT/mixer-check.txt" | cut -c1-300
