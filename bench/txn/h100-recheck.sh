#!/usr/bin/env bash
# Re-check on the 16-core GPU machine (bench/results/txn-h100-recheck/): the committer's walk,
# bounded at 4 versions (0318077), against the build before committers freed (a994292~1), and a
# profile of 16-thread disjoint commits.
# Expects gpu-pack-txnr/ at the repository root with duet_bench_txn_before (a994292~1) and
# duet_bench_txn_after (the commit under test), built without RocksDB (duet only), and perf-pack/
# (Debian's perf and its libraries). Writes log.txt, perf-*.txt and res.tgz (machine.txt and the
# JSON files) under $OUT (or ./out-txn-recheck). Before and after runs alternate.
set -uo pipefail
P=gpu-pack-txnr
O=${OUT:-out-txn-recheck}
R=$(mktemp -d)/res
mkdir -p "$O" "$R"
{
  echo "cores: $(nproc)"
  grep -m1 'model name' /proc/cpuinfo
  free -g | head -2
  nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
  cat /sys/kernel/mm/transparent_hugepage/enabled
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
} > "$R/machine.txt"
LOG=$O/log.txt
cat "$R/machine.txt" | tee -a "$LOG"
run() {  # tag set args...
  local tag=$1 set=$2; shift 2
  echo "=== $tag $set: duet_bench_txn $*" | tee -a "$LOG"
  timeout 60 "$P/duet_bench_txn_$tag" "$@" --out "$R/$tag-$set" 2>&1 | tee -a "$LOG"
}
Y=(--systems duet --keys 1000000 --threads 16 --txns 50000 --sets 3 --experiments ycsbt --ops 4 --key-bytes 8)
# 1. The two YCSB-T rows at 16 threads, alternated before/after.
for s in 1 2; do
  for tag in before after; do
    run $tag zipf50-$s "${Y[@]}" --reads 50 --dists zipf
    run $tag unif95-$s "${Y[@]}" --reads 95 --dists uniform
  done
done
# 2. Disjoint commits at 1, 4, 8, 16 threads (after; before runs the older `commit` experiment).
run after disjoint --systems duet --threads 1,4,8,16 --txns 200000 --sets 3 --experiments disjoint
run before commit --systems duet --threads 16 --txns 200000 --sets 3 --experiments commit
# The 16-thread disjoint row under perf (call graphs from DWARF: the build keeps no frame pointers).
PF=perf-pack/perf
export PERF_LD=perf-pack
if [ -x "$PF" ]; then
  echo "=== perf record 16-thread disjoint" | tee -a "$LOG"
  LD_LIBRARY_PATH=$PERF_LD timeout 60 "$PF" record -F 299 -g --call-graph dwarf,8192 -o "$R/perf.data" -- \
    "$P/duet_bench_txn_after" --systems duet --threads 16 --txns 400000 --sets 1 --experiments disjoint \
    --out "$R/after-perf" 2>&1 | tail -5 | tee -a "$LOG"
  LD_LIBRARY_PATH=$PERF_LD timeout 60 "$PF" report -i "$R/perf.data" --no-children --sort symbol --stdio \
    -g none --percent-limit 0.3 2>/dev/null | head -120 > "$O/perf-flat.txt"
  LD_LIBRARY_PATH=$PERF_LD timeout 60 "$PF" report -i "$R/perf.data" --no-children --sort symbol --stdio \
    -g caller,0.5,callee,function,percent --percent-limit 2 2>/dev/null | head -600 > "$O/perf-callers.txt"
  head -40 "$O/perf-flat.txt" | tee -a "$LOG"
  # Cache-line contention (false sharing), where the machine exposes memory sampling.
  echo "=== perf c2c 16-thread disjoint" | tee -a "$LOG"
  LD_LIBRARY_PATH=$PERF_LD timeout 40 "$PF" c2c record -o "$R/c2c.data" -- \
    "$P/duet_bench_txn_after" --systems duet --threads 16 --txns 200000 --sets 1 --experiments disjoint \
    --out "$R/after-c2c" 2>&1 | tail -3 | tee -a "$LOG"
  LD_LIBRARY_PATH=$PERF_LD timeout 40 "$PF" c2c report -i "$R/c2c.data" --stdio 2>&1 | head -300 > "$O/perf-c2c.txt"
  rm -f "$R/perf.data" "$R/c2c.data"
else
  echo "no perf-pack/perf" | tee -a "$LOG"
fi
tar -C "$(dirname "$R")" -czf "$O/res.tgz" res
