#!/usr/bin/env bash
# Nsight Compute on Epic's execution kernel, one build per source tree: on a GPU machine, from the
# repository root, builds duet_bench_epic in each tree of TREES (space-separated source folders,
# each built in <tree>/build-gpu; "." is this tree), then profiles the first NCU_LAUNCHES launches
# of exec_kernel after NCU_SKIP of them (the first epochs warm up) on the benchmark case ARGS with
# one epic-gpu system, and writes <label>.txt (the details page) per tree into $OUT. Clocks are
# left alone (--clock-control none). With NCU_SOURCE=1 the report is also saved (<label>.ncu-rep),
# <label>.txt is its details page, the run's own output goes to <label>-run.log, and the
# per-instruction SASS page with the stall samples to <label>-sass.csv. <label> is the tree's
# folder name. Example: compare the YCSB kernel of two commits with
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
label() { basename "$(realpath "$1")"; }
SECONDS=0
pids=()
for t in $TREES; do
  log="$OUT/build-$(label "$t").log"
  ( cmake -S "$t" -B "$t/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DDUET_TESTS=OFF -DDUET_BENCH=ON > "$log" 2>&1 &&
    cmake --build "$t/build-gpu" -j "$(( $(nproc) / $(wc -w <<< "$TREES") ))" --target duet_bench_epic >> "$log" 2>&1 ) &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { echo "a build failed"; tail -20 "$OUT"/build-*.log; exit 1; }; done
echo "built in ${SECONDS}s; ncu: ${NCU:-none}"
[ -n "$NCU" ] || exit 1
for t in $TREES; do
  l=$(label "$t")
  rep=() run_log="$OUT/$l.txt"
  [ "${NCU_SOURCE:-0}" = 1 ] && rep=(--import-source yes -o "$OUT/$l") run_log="$OUT/$l-run.log"
  # shellcheck disable=SC2086
  timeout 240 "$NCU" --clock-control none -k regex:exec_kernel -s "$NCU_SKIP" -c "$NCU_LAUNCHES" --set full "${rep[@]}" \
    "$t/build-gpu/bench/duet_bench_epic" --epoch 100000 --epochs 4 --threads 16 $ARGS --systems epic-gpu \
    --out "$OUT/$l.json" > "$run_log" 2>&1
  echo "$l rc=$? (${SECONDS}s)"
  if [ "${NCU_SOURCE:-0}" = 1 ]; then
    "$NCU" -i "$OUT/$l.ncu-rep" --page details > "$OUT/$l.txt" 2>&1
    "$NCU" -i "$OUT/$l.ncu-rep" --page source --csv --print-source sass > "$OUT/$l-sass.csv" 2>&1
  fi
done
