#!/usr/bin/env bash
# On a GPU machine, from the repository root (DUET_COMMIT set to the commit): builds Epic's tests
# and benchmark there with every core, runs the GPU tests and the submission front end's tests,
# then the benchmark on 16 threads: serial, epic-twin (host planning), epic-submit (the same
# epochs submitted txn by txn through the front end), epic-cpu (Epic-CPU: GPU indexing and
# planning) and epic-gpu on TPC-C NP (w 1 and 64) and YCSB-A/C. Logs and JSON go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/epic-out}
mkdir -p "$OUT"
if ! command -v nvcc >/dev/null; then export PATH="/usr/local/cuda/bin:$PATH"; fi
L="$OUT/run.log"
{ nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv; nproc; echo "commit ${DUET_COMMIT:-unknown}"; } > "$L" 2>&1
SECONDS=0
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  > "$OUT/build.log" 2>&1
if ! cmake --build build-gpu -j "$(nproc)" --target duet_epic_gpu_tests duet_epic_tests duet_bench_epic >> "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  exit 1
fi
echo "built in ${SECONDS}s" | tee -a "$L"
T=build-gpu/tests/batch/epic
timeout 150 "$T/duet_epic_gpu_tests" > "$OUT/epic_gpu_tests.log" 2>&1; echo "epic gpu tests rc=$? (${SECONDS}s)" | tee -a "$L"
timeout 60 "$T/duet_epic_tests" --gtest_filter='EpicEpochs.*:EpicDatabase.*' > "$OUT/epic_front_tests.log" 2>&1
echo "epic front-end tests rc=$? (${SECONDS}s)" | tee -a "$L"
grep -hE '^\[ *(FAILED|PASSED|SKIPPED) ' "$OUT/epic_gpu_tests.log" "$OUT/epic_front_tests.log" | tee -a "$L"
B="build-gpu/bench/duet_bench_epic --epoch 100000 --epochs 6 --threads 16"
S="--systems serial,epic-twin,epic-submit,epic-cpu,epic-gpu"
run() {  # name, timeout, args...
  local name=$1 t=$2; shift 2
  echo "== $name: duet_bench_epic --epoch 100000 --epochs 6 --threads 16 $*" >> "$L"
  timeout "$t" $B "$@" --out "$OUT/$name.json" >> "$L" 2>&1; echo "$name rc=$? (${SECONDS}s)" | tee -a "$L"
}
run epic-submit-np-w1 90 --np 1 $S
run epic-submit-np-w64 120 --np 64 $S
run epic-submit-ycsb 200 --records 1000000 --workloads A,C --thetas 0,0.99 --split 0 $S
cat "$L"
