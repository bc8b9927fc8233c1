#!/usr/bin/env bash
# The txn keyspace's two clocks (TxnConfig::clock) on a many-core machine: the TSC boundary
# measurement, the timestamp sources alone, then disjoint commits at 1-16 threads and YCSB-T
# (4 ops, 95% reads, $DISTS: default uniform, also "uniform,zipf"; 10^6 keys, 16 threads) for each of $CONFIGS (default "counter
# tsc"; also tsc256 and tsc0, the TSC at a fixed boundary of 256 or 0 cycles; "tsc" is the
# measured default), the order reversed every other round of $ROUNDS; a flat profile of 16
# disjoint committers with the counter and the TSC. Expects $PACK (default gpu-pack-clock/) with
# duet_bench_txn and its shared libraries, and perf-pack/ for the profiles (skipped without it
# or with NO_PROFILE set). Writes log.txt, machine.txt, one JSON file per run and perf-*.txt
# under $OUT.
#   pack: PACK=gpu-pack-clock bench/txn/clock-ab.sh pack   (here, from build-cpu)
set -uo pipefail
P=${PACK:-gpu-pack-clock}
if [ "${1:-}" = pack ]; then
  # shellcheck source=bench/common/pack_libs.sh
  . bench/common/pack_libs.sh
  mkdir -p "$P" && cp "${BUILD:-build-cpu}/bench/duet_bench_txn" "$P"/ && pack_libs "$P" "$P/duet_bench_txn"
  exit 0
fi
# shellcheck source=bench/common/machine_info.sh
. bench/common/machine_info.sh
O=${OUT:-out-clock-ab}
ROUNDS=${ROUNDS:-2}
DISTS=${DISTS:-uniform}
start_run "$O" "$P"
B=("$P/duet_bench_txn" --systems duet)
declare -A CLOCK=([counter]="--clock counter" [tsc]="--clock tsc" [tsc256]="--clock tsc --tsc-boundary 256"
                  [tsc0]="--clock tsc --tsc-boundary 0")
read -r -a configs <<< "${CONFIGS:-counter tsc}"
echo "=== clock" | tee -a "$LOG"
timeout 120 "${B[@]}" --experiments clock --out "$O/clock" 2>&1 | grep -E '^clock' | tee -a "$LOG"
echo "=== sources alone" | tee -a "$LOG"
timeout 120 "${B[@]}" --experiments commit --threads 16 --txns 50000 --sets 3 --out "$O/sources" 2>&1 |
  grep -E 'source alone' | tee -a "$LOG"
for round in $(seq 1 "$ROUNDS"); do
  order=("${configs[@]}")
  if [ $((round % 2)) = 0 ]; then
    order=()
    for ((i = ${#configs[@]} - 1; i >= 0; i--)); do order+=("${configs[$i]}"); done
  fi
  for c in "${order[@]}"; do
    echo "=== $c round $round: disjoint" | tee -a "$LOG"
    # shellcheck disable=SC2086
    timeout 180 "${B[@]}" ${CLOCK[$c]} --experiments disjoint --threads 1,2,4,8,16 --txns 200000 --sets 3 \
      --out "$O/$c-disjoint-$round" 2>&1 | grep -E '^commit' | sed "s/^/$c /" | tee -a "$LOG"
    echo "=== $c round $round: ycsbt" | tee -a "$LOG"
    # shellcheck disable=SC2086
    timeout 180 "${B[@]}" ${CLOCK[$c]} --experiments ycsbt --ops 4 --reads 95 --dists "$DISTS" --key-bytes 8 \
      --threads 16 --keys 1000000 --txns 200000 --sets 3 --out "$O/$c-ycsbt-$round" 2>&1 | grep -E '^ycsbt' |
      sed "s/^/$c /" | tee -a "$LOG"
  done
done
if [ -z "${NO_PROFILE:-}" ] && [ -x perf-pack/perf ]; then
  for c in counter tsc; do
    echo "=== perf record $c disjoint 16" | tee -a "$LOG"
    # shellcheck disable=SC2086
    perf_flat 999 symbol "$O/perf-$c.txt" "${B[@]}" ${CLOCK[$c]} --experiments disjoint --threads 16 --txns 1000000 \
      --sets 3 --out "$O/perf-run-$c" | grep -E '^commit' | tee -a "$LOG"
    head -25 "$O/perf-$c.txt" | tee -a "$LOG"
  done
fi
