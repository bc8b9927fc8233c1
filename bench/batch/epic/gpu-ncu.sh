#!/usr/bin/env bash
# Nsight Compute on Epic's execution kernel, one build per source tree: on a GPU machine, from the
# repository root, builds duet_bench_epic in each tree of TREES (space-separated source folders,
# each built in <tree>/build-gpu; "." is this tree), then profiles the first NCU_LAUNCHES launches
# of exec_kernel after NCU_SKIP of them (the first epochs warm up) on the benchmark case ARGS with
# one epic-gpu system, and writes <label>.txt (the details page) per tree into $OUT. Clocks are
# left alone (--clock-control none). With NCU_SOURCE=1 the report is also saved (<label>.ncu-rep) and
# its per-instruction SASS page, with the stall samples, written to <label>-sass.csv. Example: compare the YCSB kernel of two commits with
#   TREES="build-ab-a build-ab-b" ARGS="--records 1000000 --workloads F --thetas 0 --split 1"
set -uo pipefail
OUT=${OUT:-/tmp/epic-ncu}
TREES=${TREES:-.}
ARGS=${ARGS:---records 1000000 --workloads F --thetas 0 --split 1}
NCU_SKIP=${NCU_SKIP:-2}
NCU_LAUNCHES=${NCU_LAUNCHES:-1}
mkdir -p "$OUT"
if ! command -v nvcc >/dev/null; then export PATH="/usr/local/cuda/bin:$PATH"; fi
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)}
SECONDS=0
pids=()
for t in $TREES; do
  ( cmake -S "$t" -B "$t/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DDUET_TESTS=OFF -DDUET_BENCH=ON > "$OUT/build-$(basename "$(realpath "$t")").log" 2>&1 &&
    cmake --build "$t/build-gpu" -j "$(( $(nproc) / $(wc -w <<< "$TREES") ))" --target duet_bench_epic \
      >> "$OUT/build-$(basename "$(realpath "$t")").log" 2>&1 ) & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { echo "a build failed"; tail -20 "$OUT"/build-*.log; exit 1; }; done
echo "built in ${SECONDS}s; ncu: ${NCU:-none}"
[ -n "$NCU" ] || exit 1
for t in $TREES; do
  label=$(basename "$(realpath "$t")")
  # shellcheck disable=SC2086
  rep=()
  [ "${NCU_SOURCE:-0}" = 1 ] && rep=(--import-source yes -o "$OUT/$label")
  timeout 240 "$NCU" --clock-control none -k regex:exec_kernel -s "$NCU_SKIP" -c "$NCU_LAUNCHES" --set full "${rep[@]}" \
    "$t/build-gpu/bench/duet_bench_epic" --epoch 100000 --epochs 4 --threads 16 $ARGS --systems epic-gpu \
    --out "$OUT/$label.json" > "$OUT/$label.txt" 2>&1
  echo "$label rc=$? (${SECONDS}s)"
  if [ "${NCU_SOURCE:-0}" = 1 ]; then
    "$NCU" -i "$OUT/$label.ncu-rep" --page details > "$OUT/$label.txt" 2>&1
    "$NCU" -i "$OUT/$label.ncu-rep" --page source --csv --print-source sass > "$OUT/$label-sass.csv" 2>&1
  fi
done
