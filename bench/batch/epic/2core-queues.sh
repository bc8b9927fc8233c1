#!/usr/bin/env bash
# The 2-core comparison of docs/epic.md ("Per-thread queues"): the CPU twin with its default
# execution order (kAuto: per-thread queues for TPC-C, one counter for YCSB) against the same
# twin with one counter (epic-twin-counter) and the serial executor, on the same epochs,
# interleaved epoch by epoch. Idle sets first, then sets with SPINNERS busy loops beside them
# (the machine shared at a load of about SPINNERS + 2), then YCSB on the idle machine. The load
# average before each set goes into bench.log.
# Usage: bench/batch/epic/2core-queues.sh BUILD_DIR [OUT_DIR] [SPINNERS (10)]
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${1:?build dir}/bench/duet_bench_epic
R=${2:-bench/results/epic/2core-queues}
SPIN=${3:-10}
. bench/batch/epic/2core-common.sh
tpcc=(--np 2 --threads 2 --epoch 20000 --epochs 8 --systems serial,epic-twin,epic-twin-counter)
for i in 1 2 3; do run "np-w2-idle-set$i" "${tpcc[@]}" --mix np; done
for i in 1 2 3; do run "full-w2-idle-set$i" "${tpcc[@]}" --mix full; done
pids=()
for _ in $(seq "$SPIN"); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
sleep 30  # let the load average catch up
for i in 1 2 3 4; do run "np-w2-loaded-set$i" "${tpcc[@]}" --mix np; done
for i in 1 2; do run "full-w2-loaded-set$i" "${tpcc[@]}" --mix full; done
kill "${pids[@]}" 2>/dev/null || true
trap - EXIT
sleep 20
run "ycsb-idle" --records 1000000 --epoch 20000 --epochs 6 --threads 2 --workloads A,C,F --thetas 0,0.99 --split 0 \
  --systems serial,epic-twin,epic-twin-counter
load "end"
