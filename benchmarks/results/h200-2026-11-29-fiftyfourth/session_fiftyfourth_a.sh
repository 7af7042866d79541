#!/usr/bin/env bash
# Fifty-fourth session, call 1: the fifty-third session's owed run (GPU tests of the packed NaN fix, its A/B cost
# against 22dffcb on the packed workloads with a dense control, 60 s of selective_scan fuzz).
set -uo pipefail
bash benchmarks/results/h200-2026-11-29-fiftythird/next_session_a.sh
