#!/usr/bin/env bash
# On the GPU machine, from the repository root with gpu-pack-compute/ beside it (made by
# bench/compute/gpu-pack.sh): the CPU/GPU twin tests, the CPU suite, then duet_bench_compute.
# Logs and the result JSON go to $OUT. ROWS, REPS override the benchmark's sizes.
set -uo pipefail
P=gpu-pack-compute
# OpenBLAS travels compressed; cuBLAS is the machine's own (the toolkit's, else PyTorch's wheel).
L=/tmp/compute-libs
mkdir -p $L
cp $P/*.so* $L/ 2>/dev/null
for f in $P/*.xz; do [ -e "$f" ] && xz -dc "$f" > $L/$(basename "$f" .xz); done
CUBLAS=$(ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13 2>/dev/null | head -1)
[ -n "$CUBLAS" ] || CUBLAS=$(find / -name libcublas.so.13 -not -path '/proc/*' 2>/dev/null | head -1)
echo "cublas: $CUBLAS"
export LD_LIBRARY_PATH=$L:$(dirname "${CUBLAS:-/usr/local/cuda/lib64/x}"):${LD_LIBRARY_PATH:-}
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
