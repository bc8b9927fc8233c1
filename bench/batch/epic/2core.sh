#!/usr/bin/env bash
# The 2-core runs of docs/epic.md (bench/results/epic/2core/): TPC-C NP with 2 warehouses on two
# threads (serial, epic-twin, rocksdb), three sets, then one set with one thread, then YCSB
# A/B/C/F at θ 0 and 0.99, plain and split, against the same peers. The load average before each
# set goes into bench.log: the machine is shared, and the figures move with it.
# Usage: bench/batch/epic/2core.sh BUILD_DIR (Release, benchmarks on)
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${1:?build dir}/bench/duet_bench_epic
R=bench/results/epic/2core
mkdir -p "$R"
load() { echo "== $1 $(date -u +%H:%M:%S) load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for i in 1 2 3; do
  load "np w2 threads 2 set $i"
  "$B" --np 2 --mix np --threads 2 --epoch 20000 --epochs 6 --systems serial,epic-twin,rocksdb --out "$R/np-w2-t2-set$i.json"
done
load "np w2 threads 1"
"$B" --np 2 --mix np --threads 1 --epoch 20000 --epochs 6 --systems serial,epic-twin,rocksdb --out "$R/np-w2-t1.json"
load "ycsb threads 2"
"$B" --records 1000000 --epoch 20000 --epochs 6 --threads 2 --systems serial,epic-twin,rocksdb --out "$R/ycsb-t2.json"
load "end"
