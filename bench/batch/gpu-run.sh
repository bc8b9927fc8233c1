#!/usr/bin/env bash
# On the GPU machine, from the repository root: the GPU DAG twin tests, the CPU suite, and
# `duet_bench_transfer` on 1000-transfer blocks: the engine's A/B (this engine against the one
# before quick validation and the spread team), every mode at the target rows (SmallCoin and
# SmallCoin+, uniform and Zipf 0.9), and a skew sweep on fewer modes. Everything is written under
# $OUT. Time limits per step keep the whole run under about three minutes.
set -uo pipefail
P=gpu-pack-orangutan
export LD_LIBRARY_PATH=$P:${LD_LIBRARY_PATH:-}
export DUET_COMMIT=$(cat $P/COMMIT)
B=$P/duet_bench_transfer
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
lscpu | grep -E 'Model name|^CPU\(s\)|L2 cache|L3 cache' | tee -a $OUT/gpu.txt
( time timeout 60 $P/duet_batch_gpu_tests --gtest_brief=1 ) > $OUT/gpu_tests.txt 2>&1; echo "gpu tests rc $?" | tee -a $OUT/gpu_tests.txt
tail -4 $OUT/gpu_tests.txt
( time timeout 60 $P/duet_batch_tests --gtest_brief=1 ) > $OUT/cpu_tests.txt 2>&1; echo "cpu tests rc $?" | tee -a $OUT/cpu_tests.txt
tail -4 $OUT/cpu_tests.txt
# 1. Targets: every mode, uniform and Zipf 0.9, both profiles; the thread sweep with the A/B.
timeout ${T1:-75} $B --threads 16 --sizes 1000 --thetas 0,0.9 --reps 3 --thread-sweep 4,8,12,15,16 \
  --modes commutative,commutative-v0,commutative-vbarrier,commutative-central,orangutan,dag-gpu,dag-cpu,sequential,sequential-vexact,speedex \
  --out $OUT/transfer-targets.json > $OUT/transfer-targets.txt 2>&1
echo "bench targets rc $?"; cat $OUT/transfer-targets.txt
# 2. The skew sweep (Fig. 4.7's shape), fewer modes, 8 threads (the steadiest count in earlier runs).
timeout ${T2:-50} $B --threads 8 --sizes 1000 --thetas 0.3,0.4,0.5,0.6,0.8,0.99 --reps 3 --thread-sweep '' \
  --modes commutative,commutative-v0,dag-gpu,dag-cpu,sequential \
  --out $OUT/transfer-sweep.json > $OUT/transfer-sweep.txt 2>&1
echo "bench sweep rc $?"; cat $OUT/transfer-sweep.txt
