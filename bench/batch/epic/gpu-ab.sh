#!/usr/bin/env bash
# A/B of Epic on the GPU: on a GPU machine, from the repository root, builds Epic's GPU tests and
# benchmark from this tree (build-gpu) and from a base tree ($BASE_SRC, default build-ab-base,
# built in $BASE_SRC/build-gpu), runs this tree's GPU tests, then runs each benchmark case on both
# builds, alternated, on the same pre-generated epochs and threads (100K-txn epochs, 6 epochs,
# 16 threads). Make the base tree here with
#   rm -rf build-ab-base && mkdir build-ab-base &&
#   git archive <rev> -- . ':!bench/results' | tar -x -C build-ab-base
# and carry it to the GPU machine.
# Environment:
#   DUET_COMMIT, BASE_COMMIT  the two commits (recorded in each JSON)
#   STEPS    any of "build tests bench" (default all three)
#   VARIANTS lines "label|tree|extra benchmark arguments", run in this order in each round
#            (default: base, then new); tree is base ($BASE_SRC), new (this tree) or another
#            source directory made like the base tree (built in <dir>/build-gpu; its JSON's
#            commit is "$DUET_COMMIT+<dir>")
#   ROUNDS   rounds of every case (default 1)
#   CASES    lines "name|benchmark arguments" (default below); SYSTEMS (default epic-gpu)
# Logs go to $OUT (default /tmp/epic-ab; ab.log, build and test logs), and the JSON of every run,
# <case>-<label>-r<round>.json, into $OUT/ab-json.tar.gz.
set -uo pipefail
OUT=${OUT:-/tmp/epic-ab}
BASE_SRC=${BASE_SRC:-build-ab-base}
STEPS=${STEPS:-build tests bench}
VARIANTS=${VARIANTS:-"base|base|
new|new|"}
ROUNDS=${ROUNDS:-1}
SYSTEMS=${SYSTEMS:-epic-gpu}
CASES=${CASES:-"np-w1|--np 1
np-w64|--np 64
full-w1|--np 1 --mix full
full-w64|--np 64 --mix full
ycsb-a|--records 1000000 --workloads A --thetas 0,0.99 --split 0
ycsb-c|--records 1000000 --workloads C --thetas 0,0.99 --split 0
ycsb-f-split|--records 1000000 --workloads F --thetas 0,0.99 --split 1"}
J=$(mktemp -d)
mkdir -p "$OUT"
if ! command -v nvcc >/dev/null; then export PATH="/usr/local/cuda/bin:$PATH"; fi
step() { [[ " $STEPS " == *" $1 "* ]]; }
L="$OUT/ab.log"
{ nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv; nproc
  echo "new ${DUET_COMMIT:-unknown} base ${BASE_COMMIT:-unknown} steps $STEPS rounds $ROUNDS"; echo "variants: $VARIANTS"; } >> "$L" 2>&1
SECONDS=0
build() {  # source dir
  cmake -S "$1" -B "$1/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DDUET_TESTS=ON -DDUET_BENCH=ON > "$OUT/build-$2.log" 2>&1 &&
    cmake --build "$1/build-gpu" -j "${JOBS:-$(( $(nproc) / 2 ))}" --target duet_epic_gpu_tests duet_bench_epic >> "$OUT/build-$2.log" 2>&1
}
# The other trees the variants run (besides this one), built at once, sharing the cores.
mapfile -t others < <(awk -F'|' -v b="$BASE_SRC" '$2 == "base" {print b} $2 != "" && $2 != "base" && $2 != "new" {print $2}' \
  <<< "$VARIANTS" | sort -u)
if step build; then
  JOBS=${JOBS:-$(( $(nproc) / (1 + ${#others[@]}) ))} build . new & pids=($!)
  for d in "${others[@]}"; do JOBS=${JOBS:-$(( $(nproc) / (1 + ${#others[@]}) ))} build "$d" "$(basename "$d")" & pids+=($!); done
  rc=0; for p in "${pids[@]}"; do wait "$p" || rc=1; done
  echo "built this tree and ${others[*]:-nothing else}: rc=$rc in ${SECONDS}s" | tee -a "$L"
  if [ $rc -ne 0 ]; then tail -30 "$OUT"/build-*.log; exit 1; fi
fi
if step tests; then
  timeout 240 build-gpu/tests/batch/epic/duet_epic_gpu_tests > "$OUT/epic_gpu_tests.log" 2>&1
  echo "epic gpu tests rc=$? (${SECONDS}s)" | tee -a "$L"
  grep -hE '^\[ *(OK|FAILED|PASSED|SKIPPED) ' "$OUT/epic_gpu_tests.log" | tee -a "$L"
  grep -hB2 -A8 Failure "$OUT/epic_gpu_tests.log" | head -40 | tee -a "$L"
fi
if step bench; then
  for r in $(seq 1 "$ROUNDS"); do
    while IFS='|' read -r name args; do
      [ -n "$name" ] || continue
      while IFS='|' read -r label which extra; do
        [ -n "$label" ] || continue
        if [ "$which" = base ]; then bin="$BASE_SRC/build-gpu/bench/duet_bench_epic"; commit=${BASE_COMMIT:-unknown}
        elif [ "$which" = new ]; then bin=build-gpu/bench/duet_bench_epic; commit=${DUET_COMMIT:-unknown}
        else bin="$which/build-gpu/bench/duet_bench_epic"; commit="${DUET_COMMIT:-unknown}+$(basename "$which")"; fi
        echo "== $name $label round $r: duet_bench_epic --epoch 100000 --epochs 6 --threads 16 $args $extra --systems $SYSTEMS" >> "$L"
        # shellcheck disable=SC2086
        DUET_COMMIT=$commit timeout 150 "$bin" --epoch 100000 --epochs 6 --threads 16 $args $extra --systems "$SYSTEMS" \
          --out "$J/$name-$label-r$r.json" < /dev/null 2>&1 | sed "s|$J/||" >> "$L"
        echo "$name $label rc=${PIPESTATUS[0]} (${SECONDS}s)" | tee -a "$L"
      done <<< "$VARIANTS"
    done <<< "$CASES"
  done
  tar -czf "$OUT/ab-json.tar.gz" -C "$J" .
fi
