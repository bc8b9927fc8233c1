#!/usr/bin/env bash
# Packs the batch engine's GPU binaries (built with CUDA for Hopper in $BUILD, default
# /tmp/build-batch-gpu) into gpu-pack-orangutan/ for the GPU machine, with the non-system shared
# libraries they need. Run from the repository root.
set -euo pipefail
BUILD=${BUILD:-/tmp/build-batch-gpu}
rm -rf gpu-pack-orangutan && mkdir -p gpu-pack-orangutan
bins=("$BUILD/tests/batch/duet_batch_gpu_tests" "$BUILD/tests/batch/duet_batch_tests" "$BUILD/bench/duet_bench_transfer")
for b in "${bins[@]}"; do cp -L "$b" gpu-pack-orangutan/; done
for b in "${bins[@]}"; do
  ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)[.-]' || true
done | sort -u | while read -r lib; do cp -L "$lib" gpu-pack-orangutan/; done
strip --strip-debug gpu-pack-orangutan/* 2>/dev/null || true
git rev-parse HEAD > gpu-pack-orangutan/COMMIT
cp bench/batch/gpu-run.sh gpu-pack-orangutan/
du -sh gpu-pack-orangutan
