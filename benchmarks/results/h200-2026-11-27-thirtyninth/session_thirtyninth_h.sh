#!/usr/bin/env bash
# Thirty-ninth session, call 8 (its second try: the first lacked the module registration its dataclasses need): the
# kept reset form of Mamba-1's packed rows against call 7's window form, compiled for the packed 8 x 2048 forward:
# registers, spills, vector loads and stores in the PTX, times in one process, y compared.
# The window form is rows-window-call7.diff applied to scan.py as of commit 57f0958 (the run carried the result as
# scan_window_call7.py). To rerun, first, in the checkout (the GPU machine's copy has no git history):
#   git show 57f0958:flashssm/ops/selective_scan/scan.py > scan_window_call7.py
#   patch -s scan_window_call7.py benchmarks/results/h200-2026-11-27-thirtyninth/rows-window-call7.diff
# (then the kept form is also 57f0958's: later commits only restructured its host-side table builder).
OUT=${OUT:-out}
PYTHONPATH=$PWD timeout 200 python3 benchmarks/results/h200-2026-11-27-thirtyninth/diag_rows.py \
  scan_window_call7.py 2>&1 | grep -v -i warn | tee $OUT/call8-diag.txt
