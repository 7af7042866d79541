#!/usr/bin/env bash
# Ready for the next session (about 560 s). What the fifty-fourth session could not finish on the GPU:
# (1) the selective-scan GPU file whole with the trimmed edge chunks (EDGE_TILES_BWD) and the A = -inf NaN case (its
#     packed, rows, NaN and layouts tests passed in calls 2-3; two others were cut by those calls' timeouts);
# (2) the open 6 % of the short-row inference forward since the packed NaN fix: the A/B against 22dffcb again, now
#     with the inference forward's own registers (ab_scan_code.py prints them after "forward alone");
# (3) GPU fuzz with a line a case (the session's runs got 1 and 3 cases in: their first compiles take ~40 s).
# The base scan.py comes from git (the device's checkout has the repository's history up to what was pushed; a
# commit made in the session itself was missing there in call 3, so check `git cat-file -e` first).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  tests/ops/test_selective_scan.py > "$OUT/a/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/a/tests.txt" | tail -8
if git cat-file -e 22dffcb:flashssm/ops/selective_scan/scan.py; then
  git show 22dffcb:flashssm/ops/selective_scan/scan.py > /tmp/scan_old.py
  timeout 150 python3 benchmarks/ab_scan_code.py --old /tmp/scan_old.py --rounds 5 m1train-2.8b-packed-64x256 \
    m1-2.8b-packed-8x2K > "$OUT/a/ab-code.txt" 2>&1
  echo "ab rc $?"; grep -E "^m1|ms|regs|Error" "$OUT/a/ab-code.txt" | tail -12 | cut -c1-400
fi
timeout 100 python3 -m tests.fuzz.fuzz --seed 60 --budget 80 --ops selective_scan,ssd_scan --verbose > "$OUT/a/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -4 "$OUT/a/fuzz.txt" | cut -c1-600
