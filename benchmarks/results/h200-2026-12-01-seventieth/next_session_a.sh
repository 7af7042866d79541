#!/usr/bin/env bash
# Prepared by the seventieth session, not run (its device time was spent). Two H200s (nvidia-h200-x2), ~600 s; carry
# [".whl"]. That session found a 1 x 2K training call of the SSD layer 41 % faster (mamba_ssm's 23 %) with the backward
# on the calling thread (torch.autograd.set_multithreading_enabled(False)) instead of autograd's CUDA device thread.
# GPU 0: what a whole model's training step gets from it (benchmarks/model_step_threads.py: the 130M Mamba-2 and
# Mamba-1 models, a host-bound 1 x 512 step and a 4 x 2K one; flashssm and mamba_ssm's model over the same weights).
# GPU 1: the same for the Mamba-1 scan's training calls and a GPU-bound SSD call (the control); the A/B of
# backward_chain.FEWER_TORCH_CALLS (dB and dC zeroed and cast as one buffer, dA's sum alone: three torch calls fewer a
# training call; predicted -40 to -60 us at 1 x 2K, where the host bounds the call, nothing at 8 x 4K); the SSD
# backward file and test_prepared on the GPU (that change's first GPU run: bf16, the tiles and the sweeps); then issue
# 4's bench rows.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.:/tmp/site
(
  CUDA_VISIBLE_DEVICES=0 timeout 280 python3 benchmarks/model_step_threads.py --preset mamba2-130m --preset mamba-130m \
    --shape 1x512 --shape 4x2048 --rounds 5 > "$OUT/model-threads.txt" 2>&1
  # (the Gluon dispatch now asks _runtime.cuda_capability: the forward file and the dispatch tests on the GPU)
  CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging \
    --tb=short -n 14 --dist worksteal tests/ops/test_ssd_forward.py tests/ops/test_dispatch.py \
    > "$OUT/tests-forward.txt" 2>&1
) &
(
  CUDA_VISIBLE_DEVICES=1 timeout 120 python3 benchmarks/autograd_threads.py -w m1train-130m-1x8K -w m1train-2.8b-8x2K \
    -w train-2.7b-1x32K -i flashssm -i mamba_ssm --rounds 5 > "$OUT/threads.txt" 2>&1
  CUDA_VISIBLE_DEVICES=1 timeout 100 python3 benchmarks/ab_train_flag.py \
    flashssm.ops.ssd.backward_chain.FEWER_TORCH_CALLS --workload 1x2K --workload 8x4K --rounds 5 \
    > "$OUT/ab-fewer-torch-calls.txt" 2>&1
  CUDA_VISIBLE_DEVICES=1 timeout 220 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging \
    --tb=short -n 14 --dist worksteal tests/ops/test_ssd_backward.py tests/test_prepared.py > "$OUT/tests.txt" 2>&1
  CUDA_VISIBLE_DEVICES=1 timeout 110 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K \
    -w train-2.7b-1x32K -i flashssm -i mamba_ssm > "$OUT/bench-train.txt" 2>&1
) &
wait
grep -v "Warning\|warn_once" "$OUT/model-threads.txt" | tail -10
grep -v "Warning\|warn_once" "$OUT/threads.txt" | tail -8
grep -E "call|FEWER" "$OUT/ab-fewer-torch-calls.txt" | head -8
for f in tests tests-forward; do grep -E "^(FAILED|ERROR)" "$OUT/$f.txt" | sort -u | head; tail -1 "$OUT/$f.txt"; done
grep -E "^(flashssm|mamba_ssm) |train-" "$OUT/bench-train.txt" | head -12
