#!/usr/bin/env bash
# Fifty-eighth session, call 7 (typed command, kept here): the scan rows call 1 left at its limit.
mkdir -p $OUT/bench && PYTHONPATH=$PWD timeout 250 python3 -m flashssm bench -w m1train-2.8b-1x32K -w m1-n128-8x2K -i flashssm > $OUT/bench/scan-rest.txt 2>&1
