#!/usr/bin/env bash
# Sixteenth session, sixth GPU call (carry .whl; run as one command line): the 1x2K cases again, after call 5's
# training 1x2K figure (3.22 ms) stood far from earlier runs; and the A/B at 1x2K.
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w 2.7b-1x2K -w train-2.7b-1x2K -i flashssm -i mamba_ssm
PYTHONPATH=. timeout 100 python3 benchmarks/ab_pre_decays.py 3 --workloads 1x2048
