#!/usr/bin/env bash
# Before/after of the Core layout change (gts alone on its lines) on the 16-core GPU machine
# (bench/results/txn-h100-recheck/layout-*). Expects gpu-pack-txnr/ with duet_bench_txn_base
# (the commit before the change) and duet_bench_txn_fix (the change), built without RocksDB.
# Writes layout-log.txt and layout.tgz (the JSON files) under $OUT. Runs alternate.
set -uo pipefail
P=gpu-pack-txnr
O=${OUT:-out-txn-layout}
R=$(mktemp -d)/layout
mkdir -p "$O" "$R"
LOG=$O/layout-log.txt
{ echo "cores: $(nproc)"; grep -m1 'model name' /proc/cpuinfo; } | tee -a "$LOG"
run() {  # tag set args...
  local tag=$1 set=$2; shift 2
  echo "=== $tag $set: duet_bench_txn $*" | tee -a "$LOG"
  timeout 60 "$P/duet_bench_txn_$tag" "$@" --out "$R/$tag-$set" 2>&1 | tee -a "$LOG"
}
Y=(--systems duet --keys 1000000 --threads 16 --txns 50000 --sets 3 --experiments ycsbt --ops 4 --key-bytes 8)
for s in 1 2; do
  for tag in base fix; do
    run $tag disjoint-$s --systems duet --threads 1,4,8,16 --txns 200000 --sets 3 --experiments disjoint
    run $tag ycsbt-$s "${Y[@]}" --reads 50,95 --dists uniform,zipf
  done
done
tar -C "$(dirname "$R")" -czf "$O/layout.tgz" layout
