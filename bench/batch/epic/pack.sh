#!/usr/bin/env bash
# Packs Epic's GPU binaries (built with CUDA for Hopper in $BUILD, default /tmp/build-epic-gpu)
# into gpu-pack-epic/ with the non-system shared libraries they need. Run from the repository root.
set -euo pipefail
BUILD=${BUILD:-/tmp/build-epic-gpu}
rm -rf gpu-pack-epic && mkdir -p gpu-pack-epic
bins=("$BUILD/tests/batch/epic/duet_epic_gpu_tests" "$BUILD/tests/batch/epic/duet_epic_tests" "$BUILD/bench/duet_bench_epic")
for b in "${bins[@]}"; do cp -L "$b" gpu-pack-epic/; done
for b in "${bins[@]}"; do
  ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)[.-]' || true
done | sort -u | while read -r lib; do cp -L "$lib" gpu-pack-epic/; done
strip --strip-debug gpu-pack-epic/* 2>/dev/null || true
git rev-parse HEAD > gpu-pack-epic/COMMIT
cp bench/batch/epic/gpu-run.sh gpu-pack-epic/
du -sh gpu-pack-epic
