#!/usr/bin/env bash
# YCSB-T at 16 threads with both RocksDB peers, for the configurations the earlier 16-core runs
# did not reach (bench/results/txn-h200-peers/). One process per configuration, each under its
# own time limit, so a slow configuration costs only itself.
# Usage: OUT=dir bash bench/txn/h200-peers.sh GROUP, GROUP one of
#   a: 4 ops at 24-byte keys (uniform and Zipf 0.99, 50% and 95% reads), 16 ops at 24-byte keys
#      uniform, and 16 ops at Zipf 0.99 with 95% reads (8- and 24-byte keys);
#   b: 16 ops at Zipf 0.99 with 50% reads (8- and 24-byte keys);
#   c: group b with 2,000 transactions per thread per set, for every system alike (the RocksDB
#      peers did not finish group b's 20,000 within its limits).
# Expects gpu-pack-txn/ at the repository root with duet_bench_txn (linked with RocksDB 7.8) and
# the shared libraries it needs (bench/common/pack_libs.sh). Writes log-GROUP.txt, machine.txt and
# one JSON file per configuration under $OUT.
set -uo pipefail
# shellcheck source=bench/common/machine_info.sh
. bench/common/machine_info.sh
P=gpu-pack-txn
O=${OUT:-out-txn-peers}
G=${1:?group a, b or c}
mkdir -p "$O"
export LD_LIBRARY_PATH=$P${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
machine_info > "$O/machine.txt"
LOG=$O/log-$G.txt
cat "$O/machine.txt" | tee -a "$LOG"
B=(--keys 1000000 --threads 16 --txns 20000 --sets 3 --experiments ycsbt)
run() {  # name limit_s args...
  local name=$1 limit=$2; shift 2
  echo "=== $name: duet_bench_txn ${B[*]} $*" | tee -a "$LOG"
  timeout "$limit" "$P/duet_bench_txn" "${B[@]}" "$@" --out "$O/$name" 2>&1 | grep -v '^wrote' | tee -a "$LOG"
  echo "=== $name exit ${PIPESTATUS[0]}" | tee -a "$LOG"
}
case $G in
  a)
    run ops4-kb24 240 --ops 4 --key-bytes 24 --reads 50,95 --dists uniform,zipf
    run ops16-kb24-uniform 150 --ops 16 --key-bytes 24 --reads 50,95 --dists uniform
    run ops16-zipf95 150 --ops 16 --key-bytes 8,24 --reads 95 --dists zipf
    ;;
  b)
    run ops16-zipf50-kb8 270 --ops 16 --key-bytes 8 --reads 50 --dists zipf
    run ops16-zipf50-kb24 270 --ops 16 --key-bytes 24 --reads 50 --dists zipf
    ;;
  c)
    run ops16-zipf50-kb8-t2000 190 --ops 16 --key-bytes 8 --reads 50 --dists zipf --txns 2000
    run ops16-zipf50-kb24-t2000 190 --ops 16 --key-bytes 24 --reads 50 --dists zipf --txns 2000
    ;;
  *) echo "unknown group $G" >&2; exit 2 ;;
esac
