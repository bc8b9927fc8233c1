#!/usr/bin/env bash
# Before/after run of duet_bench_txn on the 16-core GPU machine (bench/results/txn-h100-inline/).
# Expects gpu-pack-txn/ at the repository root with duet_bench_txn_before and
# duet_bench_txn_after (same bench/txn/main.cpp, the txn code before and after) and the
# RocksDB libraries they link; writes log.txt and txn-h100-inline.tgz (machine.txt and the
# JSON files) under $OUT (or ./out-txn-inline).
# Runs alternate before and after, so drift on the machine hits both.
set -uo pipefail
# shellcheck source=bench/common/machine_info.sh
. bench/common/machine_info.sh
P=gpu-pack-txn
O=${OUT:-out-txn-inline}
R=$(mktemp -d)/res
mkdir -p "$O" "$R"
export LD_LIBRARY_PATH=$P${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
machine_info > "$R/machine.txt"
LOG=$O/log.txt
# A: YCSB-T (4 ops, 50/95% reads, uniform and Zipf 0.99, 8-byte keys) at 1 and 16 threads,
# disjoint commits at 1-16 threads and the ts source alone, SNAPSHOT with 15 writers.
A=(--systems duet --keys 1000000 --threads 1,16 --txns 50000 --sets 3 --experiments ycsbt,commit,snapshot
   --ops 4 --reads 50,95 --dists uniform,zipf --key-bytes 8)
# B: SNAPSHOT on one core (one snapshot thread) beside one writer.
B=(--systems duet --keys 1000000 --threads 2 --sets 3 --experiments snapshot --snapshot-threads 1)
run() {  # tag set args...
  local tag=$1 set=$2; shift 2
  echo "=== $tag $set: duet_bench_txn $*" | tee -a "$LOG"
  timeout 90 "$P/duet_bench_txn_$tag" "$@" --out "$R/$tag-$set" 2>&1 | tee -a "$LOG"
}
run before A "${A[@]}"
run after A "${A[@]}"
run before B "${B[@]}"
run after B "${B[@]}"
run after A2 "${A[@]}"
run before A2 "${A[@]}"
tar -C "$(dirname "$R")" -czf "$O/txn-h100-inline.tgz" res
