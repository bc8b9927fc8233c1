#!/usr/bin/env bash
# On a GPU machine, from the repository root (DUET_COMMIT set to the commit): builds Epic's tests
# and benchmark there with every core, then runs the steps in STEPS (default "tests submit"):
#   tests   the GPU tests (duet_epic_gpu_tests) and the front end's and placement tests
#           (duet_epic_tests: EpicEpochs, EpicDatabase, EpicDevicePlanner; with a GPU, `auto`
#           placement takes it)
#   submit  the benchmark on 16 threads, 100K-txn epochs: serial, epic-twin (host planning),
#           epic-submit (the same epochs submitted txn by txn through the front end, CPU planning),
#           epic-submit-gpu (the same through the front end with GPU indexing and planning: what
#           EpicDatabase and BATCH.CALL run on a GPU machine), epic-cpu (Epic-CPU driven
#           directly) and epic-gpu, on TPC-C NP (w 1 and 64) and YCSB-A/C
#   sweep   the latency sweep: epoch sizes 500-200K on NP (w 1, 64) and YCSB-F (θ 0, 0.99),
#           epic-twin, epic-cpu and epic-gpu
#   aborts  ten read-updates per txn, θ 0.8, injected aborts 0-50%: serial, epic-cpu, epic-gpu
#   xfer    the transfer phase of GPU epochs split (host packing, copy, results back): YCSB-A and
#           YCSB-C θ 0 plain, 10 epochs, packed against per-array transfers; with nsys present,
#           a CUDA API and memcpy summary of YCSB-C (nsys-ycsb-c.txt)
#   small   the front end at small and large epochs (500-100K txns), CPU planning (epic-submit)
#           against GPU planning with small epochs on the CPU (epic-submit-gpu, EpicDatabase's
#           default), beside epic-twin and epic-cpu: YCSB-F θ 0 and TPC-C NP w 1
# Logs and JSON go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/epic-out}
mkdir -p "$OUT"
if ! command -v nvcc >/dev/null; then export PATH="/usr/local/cuda/bin:$PATH"; fi
STEPS=${STEPS:-tests submit}
step() { [[ " $STEPS " == *" $1 "* ]]; }
L="$OUT/run.log"
{ nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv; nproc; echo "commit ${DUET_COMMIT:-unknown}"; echo "steps $STEPS"; } > "$L" 2>&1
SECONDS=0
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  > "$OUT/build.log" 2>&1
if ! cmake --build build-gpu -j "$(nproc)" --target duet_epic_gpu_tests duet_epic_tests duet_bench_epic >> "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  exit 1
fi
echo "built in ${SECONDS}s" | tee -a "$L"
T=build-gpu/tests/batch/epic
if step tests; then
  timeout 200 "$T/duet_epic_gpu_tests" > "$OUT/epic_gpu_tests.log" 2>&1; echo "epic gpu tests rc=$? (${SECONDS}s)" | tee -a "$L"
  timeout 90 "$T/duet_epic_tests" --gtest_filter='EpicEpochs.*:EpicDatabase.*:EpicDevicePlanner.*' > "$OUT/epic_front_tests.log" 2>&1
  echo "epic front-end tests rc=$? (${SECONDS}s)" | tee -a "$L"
  grep -hE '^\[ *(FAILED|PASSED|SKIPPED) ' "$OUT/epic_gpu_tests.log" "$OUT/epic_front_tests.log" | tee -a "$L"
  grep -hB2 -A8 Failure "$OUT/epic_gpu_tests.log" "$OUT/epic_front_tests.log" | head -40 | tee -a "$L"
fi
B="build-gpu/bench/duet_bench_epic --epoch 100000 --epochs 6 --threads 16"
run() {  # name, timeout, args...
  local name=$1 t=$2; shift 2
  echo "== $name: duet_bench_epic --epoch 100000 --epochs 6 --threads 16 $*" >> "$L"
  timeout "$t" $B "$@" --out "$OUT/$name.json" >> "$L" 2>&1; echo "$name rc=$? (${SECONDS}s)" | tee -a "$L"
}
S="--systems serial,epic-twin,epic-submit,epic-submit-gpu,epic-cpu,epic-gpu"
step submit && run epic-submit-np-w1 90 --np 1 $S
step submit && run epic-submit-np-w64 120 --np 64 $S
step submit && run epic-submit-ycsb 150 --records 1000000 --workloads A,C --thetas 0,0.99 --split 0 $S
SW="--epoch-sizes 500,2000,10000,50000,100000,200000 --systems epic-twin,epic-cpu,epic-gpu"
step sweep && run epic-sweep-np-w1 150 --np 1 $SW
step sweep && run epic-sweep-np-w64 150 --np 64 $SW
step sweep && run epic-sweep-ycsb-f 150 --records 1000000 --workloads F --thetas 0,0.99 --split 0 $SW
SM="--epoch-sizes 500,2000,10000,100000 --systems epic-twin,epic-submit,epic-submit-gpu,epic-cpu"
step small && run epic-small-ycsb-f 150 --records 1000000 --workloads F --thetas 0 --split 0 $SM
step small && run epic-small-np-w1 150 --np 1 $SM
step xfer && run epic-xfer-ycsb 120 --records 1000000 --workloads A,C --thetas 0 --split 0 --epochs 10 \
  --systems epic-gpu,epic-gpu-perarray
if step xfer; then
  NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
  if [ -n "$NSYS" ]; then
    timeout 150 "$NSYS" profile -o /tmp/epic-prof --force-overwrite true --stats=true -t cuda,osrt \
      build-gpu/bench/duet_bench_epic --epoch 100000 --epochs 6 --threads 16 --records 1000000 --workloads C \
      --thetas 0 --split 0 --systems epic-gpu --out /tmp/epic-prof.json > "$OUT/nsys-ycsb-c.txt" 2>&1
    echo "nsys rc=$? (${SECONDS}s)" | tee -a "$L"
  else
    echo "no nsys on this machine" | tee -a "$L"
  fi
fi
step aborts && run epic-aborts 120 --records 1000000 --workloads U --thetas 0.8 --split 0 \
  --abort-rates 0,0.1,0.25,0.5 --systems serial,epic-cpu,epic-gpu
cat "$L"
