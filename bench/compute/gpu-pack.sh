#!/usr/bin/env bash
# Builds the compute suites and benchmark for sm_90 here (nvcc present, no GPU needed) and packs
# them, with the non-system shared libraries they need (OpenBLAS and its Fortran runtime; cuBLAS
# is the GPU machine's own, from its CUDA 13 toolkit), into gpu-pack-compute/. Then, on the GPU
# machine: bench/compute/gpu-run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
B=${BUILD:-build-compute-gpu}
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$B" -j "${JOBS:-2}" --target duet_compute_tests duet_compute_gpu_tests duet_bench_compute
rm -rf gpu-pack-compute && mkdir -p gpu-pack-compute
bins=("$B/tests/compute/duet_compute_tests" "$B/tests/compute/duet_compute_gpu_tests" "$B/bench/duet_bench_compute")
for b in "${bins[@]}"; do cp -L "$b" gpu-pack-compute/; done
for b in "${bins[@]}"; do
  ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)[.-]|libcublas' || true
done | sort -u | while read -r lib; do cp -L "$lib" gpu-pack-compute/; done
strip --strip-debug gpu-pack-compute/* 2>/dev/null || true
# OpenBLAS alone is 36 MB: it travels xz-compressed (gpu-run.sh unpacks it).
xz -T2 -6 gpu-pack-compute/libopenblas.so.0
git rev-parse HEAD > gpu-pack-compute/COMMIT
du -sh gpu-pack-compute
