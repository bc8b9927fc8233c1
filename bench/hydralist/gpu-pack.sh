#!/usr/bin/env bash
# Packs duet_bench_hydralist (built here, CPU only) with the peers' shared libraries (oneTBB,
# libcds: absent on the GPU machine) into gpu-pack-hydralist/, for bench/hydralist/gpu-run.sh.
# usage: bench/hydralist/gpu-pack.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:?build directory}
rm -rf gpu-pack-hydralist && mkdir -p gpu-pack-hydralist
cp -L "$BUILD/bench/duet_bench_hydralist" gpu-pack-hydralist/
ldd "$BUILD/bench/duet_bench_hydralist" | awk '/=> \// {print $3}' |
  grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)[.-]' |
  while read -r lib; do cp -L "$lib" gpu-pack-hydralist/; done
strip --strip-debug gpu-pack-hydralist/* 2>/dev/null || true
git rev-parse HEAD > gpu-pack-hydralist/COMMIT
du -sh gpu-pack-hydralist
