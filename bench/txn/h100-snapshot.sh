#!/usr/bin/env bash
# SNAPSHOT before/after on the 16-core GPU machine (bench/results/txn-h100-snapshot/).
# Expects gpu-pack-txn/ at the repository root with duet_bench_txn_before and
# duet_bench_txn_after (the same bench/txn/main.cpp; the txn and LIT code before and after the
# SNAPSHOT work), built CPU-only (the path is CPU code), and any non-system libraries they
# link. Writes log.txt, machine.txt and the JSON files under $OUT (or ./out-txn-snapshot).
# Runs alternate before and after, so drift on the machine hits both.
set -uo pipefail
# shellcheck source=bench/common/machine_info.sh
. bench/common/machine_info.sh
P=gpu-pack-txn
O=${OUT:-out-txn-snapshot}
mkdir -p "$O"
export LD_LIBRARY_PATH=$P${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
machine_info > "$O/machine.txt"
LOG=$O/log.txt
cat "$O/machine.txt" | tee -a "$LOG"
S=(--systems duet --keys 1000000 --sets 5 --experiments snapshot --snapshot-shapes range,ranges)
# p16w15: a pool of 16 snapshot threads beside 15 writers (the target's configuration);
# p1w15: one snapshot thread beside 15 writers; p1w1: one snapshot thread beside one writer;
# p16w1: a pool of 16 beside one writer.
run() {  # tag set args...
  local tag=$1 set=$2; shift 2
  echo "=== $tag $set: duet_bench_txn $*" | tee -a "$LOG"
  timeout 60 "$P/duet_bench_txn_$tag" "$@" --out "$O/$tag-$set" 2>&1 | grep -v '^wrote' | tee -a "$LOG"
}
for rep in 1 2; do
  for tag in before after; do
    [ "$rep" = 2 ] && tag=$([ "$tag" = before ] && echo after || echo before)
    run $tag p16w15-$rep "${S[@]}" --threads 16 --snapshot-threads 16
    run $tag p1w15-$rep "${S[@]}" --threads 16 --snapshot-threads 1
  done
done
for tag in before after; do
  run $tag p1w1 "${S[@]}" --threads 2 --snapshot-threads 1
  run $tag p16w1 "${S[@]}" --threads 2 --snapshot-threads 16
done
