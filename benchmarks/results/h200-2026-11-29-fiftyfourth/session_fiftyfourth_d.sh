#!/usr/bin/env bash
# Fifty-fourth session, call 4 (130 s, run as one command line): call 3's A/B again, its base scan.py (d7f4d85's) put
# in the checkout as an untracked scan_base_tmp.py (the device's git did not have the session's commits).
mkdir -p $OUT/d && PYTHONPATH=. timeout 190 python3 benchmarks/ab_scan_code.py --old scan_base_tmp.py --rounds 4 \
  m1train-2.8b-packed-64x256 m1-2.8b-packed-8x2K > $OUT/d/ab-code.txt 2>&1
