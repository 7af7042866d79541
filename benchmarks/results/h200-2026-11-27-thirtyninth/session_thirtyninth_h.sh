#!/usr/bin/env bash
# Thirty-ninth session, call 8 (its second try: the first lacked the module registration its dataclasses need): the
# kept reset form of Mamba-1's packed rows against call 7's window form (scan_window_call7.py), compiled for the packed
# 8 x 2048 forward: registers, spills, vector loads and stores in the PTX, times in one process, y compared.
OUT=${OUT:-out}
PYTHONPATH=$PWD timeout 200 python3 benchmarks/results/h200-2026-11-27-thirtyninth/diag_rows.py \
  benchmarks/results/h200-2026-11-27-thirtyninth/scan_window_call7.py 2>&1 | grep -v -i warn | tee $OUT/call8-diag.txt
