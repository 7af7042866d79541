#!/usr/bin/env bash
# One call on the GPU machine (the device tool runs it from the repo root):
#   bash benchmarks/gpu_run.sh STEP [STEP ...] [-- BENCH ARGS]
# STEP: tests (the suite on CUDA, then -m gpu), bench (flashssm bench, full registry unless
# BENCH ARGS say otherwise), tune (benchmarks/tune_ssd_forward.py), check1m
# (benchmarks/check_huge.py ssd-fwd at 1M tokens), gputests (-m gpu only), ncu (benchmarks/profile_ssd_forward.sh),
# tunesmall (benchmarks/tune_small_kernels.py), ssdtests (the SSD forward and backward tests on CUDA, all marks,
# and the bf16 gradient error figures), scantests (the selective_scan tests on CUDA and its bf16 error
# figures), tunescan / tunescanquick / tunescanfwd (benchmarks/tune_selective_scan.py [--quick | --forward]), ncuscan (benchmarks/profile_selective_scan.sh on NCU_WORKLOADS), newtests (the step, conv1d and norm tests on CUDA), models (tests/models on CUDA), benchmodel (flashssm bench model), profilecheck (a small flashssm profile of every kernel set with --ncu),
# profile (flashssm profile with BENCH ARGS into prof-out/$PROFILE_NAME), profilencu (adds ncu counters to it),
# fuzz (tests/fuzz/fuzz.py for FUZZ_BUDGET seconds, default 240, seed FUZZ_SEED), sanitize
# (benchmarks/sanitize.sh: compute-sanitizer memcheck/racecheck/synccheck), huge (benchmarks/check_huge.py,
# inputs past 2^31 elements; BENCH ARGS pick checks), decay80 (benchmarks/analyze_decay80.py), dispatch
# (tests/ops/test_dispatch.py on CUDA: the unsupported-GPU fallback), host (benchmarks/host_overhead.py --compare
# with BENCH ARGS: host time per call, Triton's launch against the direct one). Peers travel as wheels in .whl/ (carry it). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
# transformers and its dependencies (for the model tests and bench), one wheel at a time: a wheel
# built for another Python, or a package the machine already has, must not stop the rest
if ls .whl/extra/*.whl >/dev/null 2>&1; then
  for w in .whl/extra/*.whl; do
    name=$(basename "$w" | cut -d- -f1)
    python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('${name,,}'.replace('_py','').replace('pyyaml','yaml')) is None)" 2>/dev/null \
      || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$w" 2>/dev/null \
      || echo "could not install $w"
  done
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
steps=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do steps+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
{ nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } | tee "$OUT/env.txt"
for step in "${steps[@]}"; do
  case $step in
    # every step is bounded: a hand-over bug shows up as a hang
    tests) timeout 400 python3 -m pytest -n 8 -p no:cacheprovider 2>&1 | tee "$OUT/tests.txt" | tail -15
           timeout 200 python3 -m pytest -n 4 -p no:cacheprovider -m gpu 2>&1 | tee "$OUT/tests-gpu.txt" | tail -15 ;;
    bench) timeout 500 python3 -m flashssm bench --json "$OUT/bench.json" --plot "$OUT/bench.png" "$@" 2>&1 | tee "$OUT/bench.txt" ;;
    tunebwd) timeout 540 python3 benchmarks/tune_ssd_backward.py 2>&1 | tee "$OUT/tune-bwd.txt" ;;
    tunebwdquick) timeout 300 python3 benchmarks/tune_ssd_backward.py --quick 2>&1 | tee "$OUT/tune-bwd.txt" ;;
    tune) timeout 300 python3 benchmarks/tune_ssd_forward.py "$@" 2>&1 | tee "$OUT/tune.txt" ;;
    tunesmall) timeout 300 python3 benchmarks/tune_small_kernels.py 2>&1 | tee "$OUT/tune-small.txt" ;;
    newtests) timeout 300 python3 -m pytest -n 8 -p no:cacheprovider tests/ops/test_step.py tests/ops/test_conv1d.py \
                tests/ops/test_norm.py 2>&1 | tee "$OUT/tests-new.txt" | tail -15 ;;
    check1m) timeout 200 python3 benchmarks/check_huge.py ssd-fwd --ssd-fwd-tokens 1048576 2>&1 | tee "$OUT/check1m.txt" ;;
    huge) timeout 560 python3 benchmarks/check_huge.py --json "$OUT/huge.json" "$@" 2>&1 | tee "$OUT/huge.txt" ;;
    sanitize) OUT=$OUT bash benchmarks/sanitize.sh ${SANITIZE_TOOLS:-} 2>&1 | tail -8 ;;
    decay80) timeout 300 python3 benchmarks/analyze_decay80.py "$@" 2>&1 | grep -v Warning | tee "$OUT/decay80.txt" ;;
    dispatch) timeout 200 python3 -m pytest -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_dispatch.py 2>&1 \
                | tee "$OUT/tests-dispatch.txt" | tail -5 ;;
    ssdtests) timeout 400 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py \
                tests/ops/test_ssd_backward.py 2>&1 | tee "$OUT/tests-ssd.txt" | tail -25
              timeout 120 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_ssd_backward.py \
                -k bf16_error_figures 2>&1 | tee "$OUT/bwd-errors.txt" | grep "relative error" ;;
    scantests) timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py \
                 tests/ops/test_selective_scan_reference.py 2>&1 | tee "$OUT/tests-scan.txt" | tail -25
               timeout 120 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_selective_scan.py \
                 -k bf16_error_figures 2>&1 | tee "$OUT/scan-errors.txt" | grep "relative error" ;;
    tunescan) timeout 500 python3 benchmarks/tune_selective_scan.py 2>&1 | tee "$OUT/tune-scan.txt" ;;
    tunescansweep) timeout 560 python3 benchmarks/tune_selective_scan.py --sweep 2>&1 | tee "$OUT/tune-scan.txt" ;;
    tunescanfwd) timeout 400 python3 benchmarks/tune_selective_scan.py --forward 2>&1 | tee "$OUT/tune-scan-fwd.txt" ;;
    ncuscan) for w in ${NCU_WORKLOADS:-m1-2.8b-8x2K}; do for l in ${NCU_LANES:-0}; do
                 timeout 200 bash benchmarks/profile_selective_scan.sh "$w" "$OUT/ncu-scan-$w-lanes$l.txt" "$l"; done; done ;;
    tunescanbwd) timeout 500 python3 benchmarks/tune_selective_scan.py --backward --quick 2>&1 | tee "$OUT/tune-scan-bwd.txt" ;;
    tunescanquick) timeout 300 python3 benchmarks/tune_selective_scan.py --quick 2>&1 | tee "$OUT/tune-scan.txt" ;;
    models) timeout 400 python3 -m pytest -p no:cacheprovider -s -m "gpu or not gpu" tests/models 2>&1 \
              | tee "$OUT/tests-models.txt" | grep -E "relative error|passed|failed|Error" | tail -30 ;;
    benchmodel) timeout 560 python3 -m flashssm bench model --json "$OUT/bench-model.json" "$@" 2>&1 \
                  | tee "$OUT/bench-model.txt" ;;
    gputests) timeout 300 python3 -m pytest -n 4 -p no:cacheprovider -m gpu 2>&1 | tee "$OUT/tests-gpu.txt" | tail -15 ;;
    profilecheck) timeout 400 python3 -m flashssm profile --model mamba2-130m --mode train --batch 2 --seqlen 1024 \
                    --layers 2 --kernels flashssm mamba_ssm reference --ncu --ncu-timeout 200 --out prof-out/check \
                    2>&1 | tail -30
                  tar czf "$OUT/profile-check.tgz" -C prof-out check ;;
    # profiles live in prof-out/ (kept between calls on a warm machine, so that profilencu can add
    # counters to one); each call's copy comes back as one archive
    profile) timeout 560 python3 -m flashssm profile --out "prof-out/${PROFILE_NAME:-run}" "$@" 2>&1 | tail -30
             tar czf "$OUT/profile-${PROFILE_NAME:-run}.tgz" -C prof-out "${PROFILE_NAME:-run}" ;;
    profilencu) timeout 560 python3 -m flashssm profile --from "prof-out/${PROFILE_NAME:-run}" --ncu 2>&1 | tail -30
                tar czf "$OUT/profile-${PROFILE_NAME:-run}.tgz" -C prof-out "${PROFILE_NAME:-run}" ;;
    fuzz) timeout $(( ${FUZZ_BUDGET:-240} + 120 )) python3 -m tests.fuzz.fuzz --seed "${FUZZ_SEED:-1}" \
            --budget "${FUZZ_BUDGET:-240}" 2>&1 | grep -v Warning | tee "$OUT/fuzz.txt" | tail -20 ;;
    host) timeout 300 python3 benchmarks/host_overhead.py --compare "$@" 2>&1 | tee "$OUT/host-overhead.txt" ;;
    ncu) timeout 200 bash benchmarks/profile_ssd_forward.sh 2.7b-8x4K "$OUT/ncu.txt" | tail -80 ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
