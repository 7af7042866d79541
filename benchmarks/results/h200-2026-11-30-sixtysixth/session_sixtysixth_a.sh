#!/usr/bin/env bash
# Sixty-sixth session, call 1 (about 480 s): is moving B and C from L2 into shared memory what the SSD forward waits
# on? (1) Nsight Compute's L2 and DRAM figures for the Gluon forward (8x4K late, 1x128K early) and for every kernel of
# the 8x4K training call; (2) the forward with some of its loads skipped (benchmarks/l2_probe_variants.py: wrong
# outputs, timing only) against the same file unchanged, alternating in one process.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/ncu"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/gpu.txt"
M=gpu__time_duration.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum.per_second,sm__throughput.avg.pct_of_peak_sustained_elapsed
for w in 2.7b-8x4K 2.7b-1x128K train-2.7b-8x4K; do
  timeout 150 ncu --profile-from-start off --clock-control none --metrics $M python3 benchmarks/l2_profile.py $w \
    > "$OUT/ncu/metrics-$w.txt" 2>&1
  echo "== ncu metrics $w rc $?"
  grep -E "^  [A-Za-z_]|gpu__time|lts__|dram__|l1tex__|sm__throughput" "$OUT/ncu/metrics-$w.txt" | cut -c1-150 | head -80
done
timeout 120 ncu --profile-from-start off --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables python3 benchmarks/l2_profile.py 2.7b-8x4K > "$OUT/ncu/sections-2.7b-8x4K.txt" 2>&1
echo "== ncu sections rc $?"; grep -E "Throughput|Hit Rate|Busy|Bandwidth" "$OUT/ncu/sections-2.7b-8x4K.txt" | head -30
python3 benchmarks/l2_probe_variants.py /tmp/l2v
timeout 260 python3 benchmarks/ab_gluon_forward.py --workload 2.7b-8x4K --workload 2.7b-1x128K --workload 2.7b-32x2K \
  --rounds 5 --before /tmp/l2v/same.py --before /tmp/l2v/bc_half.py --before /tmp/l2v/bc_none.py \
  --before /tmp/l2v/x_half.py > "$OUT/ab-l2-variants.txt" 2>&1
echo "== ab rc $?"; grep -v -i warn "$OUT/ab-l2-variants.txt" | tail -8 | cut -c1-600
