#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with gpu-pack-cods/ (bench/cods/pack.sh)
# carried along: the CODS GPU tests, then duet_bench_cods's GPU figures, then its CPU figures
# with 1 to 16 threads. Logs and JSON go to $OUT (default bench/results/cods-h100).
# Each phase has its own time limit, so a hung phase leaves the others' results. GPU_FIGURES picks
# the GPU figures (default gpu,gpu-cpu); CPU_S=0 skips the CPU figures.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench/results/cods-h100}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/gpu-pack-cods${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DUET_COMMIT=$(cat gpu-pack-cods/COMMIT 2>/dev/null || echo unknown)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
timeout "${TESTS_S:-90}" gpu-pack-cods/duet_gpu_tests --gtest_filter='*Cods*' 2>&1 | tail -n 150 > "$out/tests.log"
echo "tests rc=${PIPESTATUS[0]}" >> "$out/tests.log"
timeout "${GPU_S:-200}" gpu-pack-cods/duet_bench_cods --figures "${GPU_FIGURES:-gpu,gpu-cpu}" --out "$out/cods-gpu.json" \
  ${GPU_ARGS:-} > "$out/bench-gpu.log" 2>&1
echo "gpu bench rc=$?" >> "$out/bench-gpu.log"
if [ "${CPU_S:-280}" != 0 ]; then
  timeout "${CPU_S:-280}" gpu-pack-cods/duet_bench_cods --figures list,list-k,hash,hash-k,tree,tree-k \
    --threads 1,2,4,8,16 --out "$out/cods-cpu.json" ${CPU_ARGS:-} > "$out/bench-cpu.log" 2>&1
  echo "cpu bench rc=$?" >> "$out/bench-cpu.log"
fi
tail -n 3 "$out"/*.log
