#!/usr/bin/env bash
# On the GPU machine, from the repository root with gpu-pack-compute/ beside it (made by
# bench/compute/gpu-pack.sh): the CPU/GPU twin tests, the CPU suite, then duet_bench_compute.
# Logs and the result JSON go to $OUT. ROWS, REPS override the benchmark's sizes.
set -uo pipefail
P=gpu-pack-compute
export LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export DUET_COMMIT=$(cat $P/COMMIT)
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
lscpu | grep -E 'Model name|^CPU\(s\)' | tee -a $OUT/gpu.txt
( time timeout 120 $P/duet_compute_gpu_tests --gtest_brief=1 ) > $OUT/compute_gpu_tests.txt 2>&1
echo "gpu tests rc $?" | tee -a $OUT/compute_gpu_tests.txt
tail -12 $OUT/compute_gpu_tests.txt
( time timeout 60 $P/duet_compute_tests --gtest_brief=1 ) > $OUT/compute_tests.txt 2>&1
echo "cpu suite rc $?" | tee -a $OUT/compute_tests.txt
tail -5 $OUT/compute_tests.txt
timeout ${T:-200} $P/duet_bench_compute --rows ${ROWS:-2^24} --reps ${REPS:-5} --out $OUT/compute-h100.json 2>&1 | tee $OUT/bench.txt
echo "bench rc ${PIPESTATUS[0]}"
