#!/usr/bin/env bash
# Runs Epic's GPU tests, its CPU tests and the YCSB benchmark on the GPU machine from the pack
# (bench/batch/epic/pack.sh), writing logs and JSON under $OUT. Run from the repository root.
set -uo pipefail
P=${PACK:-gpu-pack-epic}
OUT=${OUT:-/tmp/epic-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$P:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
timeout 150 "$P/duet_epic_gpu_tests" > "$OUT/epic_gpu_tests.log" 2>&1; echo "gpu tests rc=$?"
tail -25 "$OUT/epic_gpu_tests.log"
timeout 60 "$P/duet_epic_tests" > "$OUT/epic_tests.log" 2>&1; echo "cpu tests rc=$?"
tail -3 "$OUT/epic_tests.log"
DUET_COMMIT=$(cat "$P/COMMIT") timeout 240 "$P/duet_bench_epic" --records 1000000 --epoch 100000 --epochs 6 \
  --threads 16 --out "$OUT/epic-ycsb-h100.json" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
cat "$OUT/bench.log"
