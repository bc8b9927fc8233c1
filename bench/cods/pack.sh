#!/usr/bin/env bash
# Packs duet_bench_cods and duet_gpu_tests, built here with CUDA for Hopper (nvcc, no GPU needed),
# into gpu-pack-cods/ (ignored) with the non-system shared libraries they use (libcds, oneTBB),
# for a GPU machine that lacks Debian's packages. Then run bench/cods/gpu-run.sh there.
# Usage: bench/cods/pack.sh [build dir, default build-cods-gpu]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-cods-gpu}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DDUET_BENCH=ON >/dev/null
cmake --build "$build" -j2 --target duet_bench_cods duet_gpu_tests
rm -rf gpu-pack-cods && mkdir -p gpu-pack-cods
bins=("$build/bench/duet_bench_cods" "$build/tests/duet_gpu_tests")
for b in "${bins[@]}"; do cp -L "$b" gpu-pack-cods/; done
for b in "${bins[@]}"; do
  ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)[.-]' || true
done | sort -u | while read -r lib; do cp -L "$lib" gpu-pack-cods/; done
strip --strip-debug gpu-pack-cods/* 2>/dev/null || true
git rev-parse HEAD > gpu-pack-cods/COMMIT
du -sh gpu-pack-cods
