#!/usr/bin/env bash
# A profile of YCSB-T (4 ops, 95% reads, uniform, 10^6 8-byte keys) at 16 threads, duet only,
# and the same run unprofiled before and after it, on a many-core machine. Expects $PACK
# (default gpu-pack-clock/, made by `bench/txn/clock-ab.sh pack`) and perf-pack/. $CLOCK
# (counter or tsc, default counter). Writes log.txt, machine.txt, perf-flat.txt (by symbol),
# perf-callers.txt (call graphs of the leading symbols) and the JSON files under $OUT.
set -uo pipefail
P=${PACK:-gpu-pack-clock}
O=${OUT:-out-profile-ycsbt}
# shellcheck source=bench/common/machine_info.sh
. bench/common/machine_info.sh
start_run "$O" "$P"
B=("$P/duet_bench_txn" --systems duet --clock "${CLOCK:-counter}" --experiments ycsbt --ops 4 --reads 95
   --dists uniform --key-bytes 8 --threads 16 --keys 1000000)
for run in before profiled after; do
  echo "=== $run" | tee -a "$LOG"
  if [ "$run" = profiled ]; then
    LD_LIBRARY_PATH=perf-pack:$LD_LIBRARY_PATH timeout 200 perf-pack/perf record -g -F 999 -o "$O/perf.data" -- \
      "${B[@]}" --txns 1000000 --sets 3 --out "$O/$run" 2>&1 | grep -E '^ycsbt' | tee -a "$LOG"
  else
    timeout 120 "${B[@]}" --txns 200000 --sets 3 --out "$O/$run" 2>&1 | grep -E '^ycsbt' | tee -a "$LOG"
  fi
done
LD_LIBRARY_PATH=perf-pack timeout 120 perf-pack/perf report -i "$O/perf.data" --no-children --sort symbol -g none \
  --stdio --percent-limit 0.4 2>/dev/null | grep -v '^$' | head -70 > "$O/perf-flat.txt"
LD_LIBRARY_PATH=perf-pack timeout 120 perf-pack/perf report -i "$O/perf.data" --no-children --sort symbol \
  -g caller,0.5,callee --stdio --percent-limit 3 2>/dev/null | grep -v '^$' | head -400 > "$O/perf-callers.txt"
head -40 "$O/perf-flat.txt" | tee -a "$LOG"
rm -f "$O/perf.data"
