#!/usr/bin/env bash
# Runs Epic's GPU tests and benchmarks on the GPU machine from the pack (bench/batch/epic/pack.sh),
# writing logs and JSON under $OUT. Run from the repository root. Steps:
#   1. duet_epic_gpu_tests: GPU plan == CPU twin; GPU execution and Epic-CPU == the serial checker
#   2. YCSB A/B/C/F (theta 0 and 0.99, plain and split): serial, epic-cpu, epic-gpu
#   3. TPC-C NP at 1 and 64 warehouses: serial, epic-cpu, epic-gpu
#   4. epic-gpu again with a 256 ns polling backoff cap on the contended cases (same epochs)
#   5. (step "full") TPC-C's full mix at 1 and 64 warehouses: serial, epic-cpu, epic-gpu
#   6. (step "sweep") the latency sweep: epoch sizes 500-200K on NP (w 1, 64) and YCSB-F (θ 0, 0.99)
#   7. (step "aborts") ten read-updates per txn, θ 0.8, injected aborts 0-50%: serial, epic-cpu, epic-gpu
#   8. (step "index") GPU indexing (epic-gpu) against host indexing (epic-gpu-hostidx) on the same
#      epochs: YCSB-A θ 0 plain, TPC-C NP at 1 and 64 warehouses
#   9. (step "cpuplan") Epic-CPU with GPU indexing and planning (epic-cpu) against Epic-CPU with host
#      indexing and GPU planning (epic-cpu-hostidx) and with host indexing and planning (epic-twin),
#      and GPU epochs with packed transfers (epic-gpu) against per-array ones (epic-gpu-perarray):
#      YCSB-A θ 0 and 0.99 plain, TPC-C NP at 1 and 64 warehouses
#  11. (step "pieces") piece splitting: YCSB A, C and F (θ 0 and 0.99, plain and split; PIECES_YCSB
#      picks workloads) with whole txns and with each op a piece, then TPC-C (PIECES_TPCC, default
#      "np1 np64 full1") with whole Payments and with Payments in pieces; epic-cpu and epic-gpu
#      (PIECES_SYSTEMS: e.g. add epic-submit-gpu for the front end's submit_pieces; a YCSB batch of
#      100K txns in pieces is 10^6 entries, past the front end's 2^19-entry epoch, so it runs as two)
#  10. (step "peers") the RocksDB TransactionDB peer beside serial, epic-twin, epic-cpu and epic-gpu on
#      the same epochs and threads: TPC-C NP and the full mix at 1 and 64 warehouses, YCSB-A and C
#      at θ 0 and 0.99 plain (the pack carries librocksdb when the build found it)
# GTEST_FILTER, if set, narrows step 1.
# epic-twin (the CPU planning twin, the CI path) is left out here to keep the run short.
# STEPS (default "tests ycsb np backoff"; also "full", "sweep" and "aborts") picks steps.
set -uo pipefail
P=${PACK:-gpu-pack-epic}
OUT=${OUT:-/tmp/epic-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$P:${LD_LIBRARY_PATH:-}"
export DUET_COMMIT=$(cat "$P/COMMIT")
L="$OUT/bench.log"
{ nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv; nproc; } > "$L" 2>&1
cat "$L"
SECONDS=0
STEPS=${STEPS:-tests ycsb np backoff}
step() { [[ " $STEPS " == *" $1 "* ]]; }
if step tests; then
  timeout ${TESTS_TIMEOUT:-120} "$P/duet_epic_gpu_tests" ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} > "$OUT/epic_gpu_tests.log" 2>&1; echo "gpu tests rc=$? (${SECONDS}s)" | tee -a "$L"
  grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) ' "$OUT/epic_gpu_tests.log"; grep -B2 -A6 Failure "$OUT/epic_gpu_tests.log" | head -40
fi
B="$P/duet_bench_epic --epoch 100000 --epochs 6 --threads 16"
run() {  # name, timeout, args...
  local name=$1 t=$2; shift 2
  echo "== $name: duet_bench_epic --epoch 100000 --epochs 6 --threads 16 $*" >> "$L"
  timeout "$t" $B "$@" --out "$OUT/$name.json" >> "$L" 2>&1; echo "$name rc=$? (${SECONDS}s)" | tee -a "$L"
}
step index && run epic-index-ycsb-a-h100 60 --records 1000000 --workloads A --thetas 0 --split 0 --systems epic-gpu,epic-gpu-hostidx
step index && run epic-index-np-w1-h100 60 --np 1 --systems epic-gpu,epic-gpu-hostidx
step index && run epic-index-np-w64-h100 60 --np 64 --systems epic-gpu,epic-gpu-hostidx
CP="--systems epic-twin,epic-cpu,epic-cpu-hostidx,epic-gpu,epic-gpu-perarray"
step cpuplan && run epic-cpuplan-ycsb-a-h100 ${T_YCSB:-70} --records 1000000 --workloads A --thetas 0,0.99 --split 0 $CP
step cpuplan && run epic-cpuplan-np-w1-h100 ${T_NP1:-50} --np 1 $CP
step cpuplan && run epic-cpuplan-np-w64-h100 ${T_NP64:-50} --np 64 $CP
step ycsb && run epic-ycsb-h100 260 --records 1000000 --systems serial,epic-cpu,epic-gpu,epic-gpu-hostidx
step np && run epic-np-w1-h100 60 --np 1 --systems serial,epic-cpu,epic-gpu,epic-gpu-hostidx
step np && run epic-np-w64-h100 80 --np 64 --systems serial,epic-cpu,epic-gpu,epic-gpu-hostidx
step backoff && run epic-ycsb-backoff256-h100 60 --records 1000000 --systems epic-gpu --workloads A,F --thetas 0.99 --gpu-backoff 256
step backoff && run epic-np-backoff256-h100 40 --np 1 --systems epic-gpu --gpu-backoff 256
step pieces && run epic-pieces-ycsb ${T_PIECES:-300} --records 1000000 --workloads ${PIECES_YCSB:-A,C,F} --thetas 0,0.99 --split 0,1 --pieces 0,1 --systems ${PIECES_SYSTEMS:-epic-cpu,epic-gpu}
for tp in ${PIECES_TPCC:-np1 np64 full1}; do  # TPC-C whole, then with Payments in pieces (one run each)
  wh=${tp#np}; wh=${wh#full}; mix=np; [[ $tp == full* ]] && mix=full
  for pc in 0 1; do
    step pieces && run epic-pieces-$tp-$pc ${T_PIECES_TPCC:-50} --np $wh --mix $mix --pieces $pc --systems ${PIECES_SYSTEMS:-epic-cpu,epic-gpu}
  done
done
step full && run epic-full-w1-h100 90 --np 1 --mix full --systems serial,epic-cpu,epic-gpu
step full && run epic-full-w64-h100 90 --np 64 --mix full --systems serial,epic-cpu,epic-gpu
SW="--epoch-sizes 500,2000,10000,50000,100000,200000 --systems epic-cpu,epic-gpu"
step sweep && run epic-sweep-np-h100 240 --np 1 $SW
step sweep && run epic-sweep-np64-h100 240 --np 64 $SW
step sweep && run epic-sweep-ycsbf-h100 240 --records 1000000 --workloads F --split 0 $SW
step aborts && run epic-aborts-h100 240 --records 1000000 --workloads U --thetas 0.8 --split 0 \
  --abort-rates 0,0.1,0.25,0.5 --systems serial,epic-cpu,epic-gpu
PR="--systems serial,rocksdb,epic-twin,epic-cpu,epic-gpu"
step peers && run epic-peers-np-w1 70 --np 1 $PR
step peers && run epic-peers-np-w64 80 --np 64 $PR
step peers && run epic-peers-ycsb 150 --records 1000000 --workloads A,C --thetas 0,0.99 --split 0 $PR
step peers && run epic-peers-full-w1 50 --np 1 --mix full $PR
step peers && run epic-peers-full-w64 60 --np 64 --mix full $PR
cat "$L"
