#!/usr/bin/env bash
# Twentieth session, seventh GPU call: after call 6 (the first compute-sanitizer run over the selective scan since its
# backward v2): memcheck of the packed case with _tokens' read of the token before a tile kept inside the sequence,
# and racecheck of both cases with the loads ahead off (the previous kernel), to see whether its shared-memory
# hazards at the dB/dC atomics came with this session's change.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
run="python3 benchmarks/sanitize.py --case scan_varlen --fuzz-cases 0"
FLASHSSM_POISON_OUTPUTS=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool memcheck $run \
  > "$OUT/call7-sanitize-memcheck.txt" 2>&1
echo "memcheck: exit $?; $(grep -E "ERROR SUMMARY" "$OUT/call7-sanitize-memcheck.txt" | tail -1)"
cat > /tmp/old_path.py <<'PY'
import runpy, sys
from flashssm.ops.selective_scan import scan
scan.BC_AHEAD_FWD = scan.BC_AHEAD_BWD = scan.TILE_AHEAD_BWD = False
sys.argv = ["sanitize.py", "--case", "scan_big_state", "--case", "scan_varlen", "--fuzz-cases", "0"]
runpy.run_path("benchmarks/sanitize.py", run_name="__main__")
PY
FLASHSSM_POISON_OUTPUTS=1 timeout 200 python3 /tmp/old_path.py 2>&1 | grep -v -i warn | tail -2
FLASHSSM_POISON_OUTPUTS=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool racecheck \
  python3 /tmp/old_path.py > "$OUT/call7-sanitize-racecheck-old.txt" 2>&1
echo "racecheck, loads ahead off: exit $?; $(grep -E "RACECHECK SUMMARY" "$OUT/call7-sanitize-racecheck-old.txt" | tail -1)"
grep "Race reported" "$OUT/call7-sanitize-racecheck-old.txt" | head -4
