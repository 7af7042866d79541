#!/usr/bin/env bash
# Prepared by the seventy-second session (next_session_a.sh), run by the seventy-third. One H200, ~500 s; no wheels needed.
# (1) The GPU tests the session wrote after its last device call: the small hybrid model trained through CUDA graphs
# (test_gpu_training_under_cuda_graphs_matches_eager[hybrid]), a decoding step under reduce-overhead
# (test_compiled_decoding_step_matches_eager[...-reduce-overhead]), a whole model's compiled forward and backward
# with packed sequences under Inductor (test_compiled_training_matches_eager; the offsets no longer read while
# traced: test_packed_offsets_checked_when_a_compiled_call_runs), the recompute's tests (test_recompute.py), the
# model bench's test. (2) Where the 370m model's 8 x 2K training step's memory goes, eager against torch.compile and
# its CUDA graphs (benchmarks/model_memory.py: between steps, held by the forward, peak from the first step; eagerly
# the tensors autograd saves by the line that saved them): the bench had 36900 MiB eager and an undercounted 13678
# for the graphs; and eager with the recompute (`MambaLM.set_recompute`: the conv's and norm's outputs remade in the
# backward; predicted ~6.8 GB less at a ~5 % slower step). (3) The bench's rows: flashssm, its recompute and its
# graphs in one run (time; peak, the graphs' over their warm-up).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/models/test_models.py tests/models/test_recompute.py tests/ops/test_step.py \
  tests/ops/test_checks.py tests/bench/test_bench.py -k "compile or graphs or step or model_bench or recompute" \
  > "$OUT/tests.txt" 2>&1
timeout 150 python3 benchmarks/model_memory.py --preset mamba2-370m --shape 8x2048 > "$OUT/memory.txt" 2>&1
timeout 60 python3 benchmarks/model_memory.py --preset mamba2-370m --shape 8x2048 --mode eager --recompute \
  > "$OUT/memory-recompute.txt" 2>&1
timeout 120 python3 -m flashssm bench model -s train-370m-8x2K -i flashssm -i flashssm-recompute -i flashssm-graphs \
  --repeat 5 > "$OUT/bench-model.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head; tail -1 "$OUT/tests.txt"
grep -hE "^(eager|default|reduce|mamba2)" "$OUT"/memory*.txt; grep -hE "train" "$OUT"/bench-model*.txt
