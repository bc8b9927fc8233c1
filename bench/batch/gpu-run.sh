#!/usr/bin/env bash
# On the GPU machine, from the repository root: the GPU DAG twin tests, the oracle suite, and
# `duet_bench_transfer` (1000-transfer blocks over the whole skew sweep; 10^4 and 10^5 blocks on
# a subset), with everything written under $OUT.
set -uo pipefail
P=gpu-pack-orangutan
export LD_LIBRARY_PATH=$P:${LD_LIBRARY_PATH:-}
export DUET_COMMIT=$(cat $P/COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
lscpu | grep -E 'Model name|^CPU\(s\)' | tee -a $OUT/gpu.txt
( time $P/duet_batch_gpu_tests --gtest_brief=1 ) > $OUT/gpu_tests.txt 2>&1; echo "gpu tests rc $?" | tee -a $OUT/gpu_tests.txt
tail -5 $OUT/gpu_tests.txt
( time $P/duet_batch_tests --gtest_brief=1 ) > $OUT/cpu_tests.txt 2>&1; echo "cpu tests rc $?" | tee -a $OUT/cpu_tests.txt
tail -3 $OUT/cpu_tests.txt
timeout ${T1:-90} $P/duet_bench_transfer --threads 16 --sizes 1000 --reps 3 --out $OUT/transfer-1000.json > $OUT/transfer-1000.txt 2>&1
echo "bench 1000 rc $?"; cat $OUT/transfer-1000.txt
timeout ${T2:-100} $P/duet_bench_transfer --threads 16 --sizes 10000,100000 --thetas 0,0.6,0.9,0.99 --reps 3 --large-blocks 10 --thread-sweep '' \
  --modes orangutan,commutative,dag-gpu,dag-cpu,sequential,speedex \
  --out $OUT/transfer-large.json > $OUT/transfer-large.txt 2>&1
echo "bench large rc $?"; cat $OUT/transfer-large.txt
