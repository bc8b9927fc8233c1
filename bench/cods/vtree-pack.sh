#!/usr/bin/env bash
# Packs duet_bench_cods and duet_gpu_tests, built here with CUDA for Hopper (nvcc, no GPU needed),
# into gpu-pack-codsv/ (ignored) with the non-system shared libraries they use, for the versioned
# tree's GPU run (bench/cods/vtree-run.sh on the GPU machine).
# Usage: bench/cods/vtree-pack.sh [build dir, default build-codsv-gpu]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-codsv-gpu}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DDUET_BENCH=ON >/dev/null
cmake --build "$build" -j2 --target duet_bench_cods duet_gpu_tests
rm -rf gpu-pack-codsv && mkdir -p gpu-pack-codsv
bins=("$build/bench/duet_bench_cods" "$build/tests/duet_gpu_tests")
for b in "${bins[@]}"; do cp -L "$b" gpu-pack-codsv/; done
for b in "${bins[@]}"; do
  ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)[.-]' || true
done | sort -u | while read -r lib; do cp -L "$lib" gpu-pack-codsv/; done
strip --strip-debug gpu-pack-codsv/* 2>/dev/null || true
git rev-parse HEAD > gpu-pack-codsv/COMMIT
du -sh gpu-pack-codsv
