#!/usr/bin/env bash
# Sixty-ninth session, call 2 (one H200, ~300 s, carry [".whl"]): is the TMA form worth it for the forward alone now
# that its descriptors go through the direct launch? (The sixty-eighth session's A/B of it ran through Triton's own
# launcher, unprepared: +15 % at 8 x 4K, not explained.) The A/B with each kernel's time by the profiler (host time
# apart), then the bench's forward rows against mamba_ssm with TMA True (the default: the forward alone on cp.async)
# and "always", in separate processes.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
PYTHONPATH=. timeout 200 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.TMA --value True \
  --value '"always"' --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --workload 2.7b-8x4K-fp16 \
  --rounds 5 --kernels > "$OUT/ab-tma.txt" 2>&1
cat "$OUT/ab-tma.txt"
W=(-w 2.7b-8x4K -w 2.7b-32x2K -w 2.7b-8x4K-layer -i flashssm -i mamba_ssm)
i=0
for v in True '"always"' True '"always"'; do
  i=$((i + 1)); tag=$i-$(echo "$v" | tr -d '"')
  PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -c "
import runpy, sys
import flashssm.ops.ssd.forward_gluon as g
g.TMA = $v
sys.argv = ['flashssm', 'bench'] + sys.argv[1:]
runpy.run_module('flashssm', run_name='__main__')
" "${W[@]}" > "$OUT/bench-$tag.txt" 2>&1
  echo "== bench TMA=$v"; grep -E "^(2.7b|flashssm|mamba_ssm)" "$OUT/bench-$tag.txt"
done
