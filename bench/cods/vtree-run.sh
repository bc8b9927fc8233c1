#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with gpu-pack-codsv/ (bench/cods/vtree-pack.sh)
# carried along: the CODS GPU tests (the versioned tree's twin test among them), then
# duet_bench_cods --figures vtree. Logs and JSON go to $OUT (default bench/results/cods-h100-versioned).
# Every mix on every shape (tiles, one lane, mixed: 6 shapes x 2 regimes) takes about three times
# the two tile shapes' run; BENCH_ARGS="--vtree-mixes find,get90,r10-get80" (or --gpu-filter)
# keeps a run within one command's time on the GPU machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench/results/cods-h100-versioned}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/gpu-pack-codsv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DUET_COMMIT=$(cat gpu-pack-codsv/COMMIT 2>/dev/null || echo unknown)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
timeout "${TESTS_S:-100}" gpu-pack-codsv/duet_gpu_tests --gtest_filter='*Cods*' 2>&1 | tail -n 80 > "$out/tests.log"
echo "tests rc=${PIPESTATUS[0]}" >> "$out/tests.log"
timeout "${BENCH_S:-400}" gpu-pack-codsv/duet_bench_cods --figures vtree --out "$out/vtree.json" ${BENCH_ARGS:-} \
  > "$out/bench-vtree.log" 2>&1
echo "vtree bench rc=$?" >> "$out/bench-vtree.log"
tail -n 40 "$out"/*.log
