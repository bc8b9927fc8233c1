#!/usr/bin/env bash
# YCSB-T (4 ops, 95% reads, uniform, 10^6 8-byte keys, 16 threads, duet only) under two
# environments, alternated over $ROUNDS rounds (default 3): $ENV_A (default empty) and $ENV_B
# (default MALLOC_CONF=thp:always,metadata_thp:always, jemalloc's transparent huge pages for
# its arenas). Expects $PACK (default gpu-pack-clock/, from `bench/txn/clock-ab.sh pack`).
# Writes log.txt, machine.txt and the JSON files under $OUT.
set -uo pipefail
P=${PACK:-gpu-pack-clock}
O=${OUT:-out-env-ab}
ROUNDS=${ROUNDS:-3}
# shellcheck source=bench/common/machine_info.sh
. bench/common/machine_info.sh
start_run "$O" "$P"
declare -A ENVS=([a]="${ENV_A:-}" [b]="${ENV_B:-MALLOC_CONF=thp:always,metadata_thp:always}")
for round in $(seq 1 "$ROUNDS"); do
  order=(a b)
  [ $((round % 2)) = 0 ] && order=(b a)
  for x in "${order[@]}"; do
    echo "=== $x (${ENVS[$x]:-default}) round $round" | tee -a "$LOG"
    # shellcheck disable=SC2086
    env ${ENVS[$x]} timeout 120 "$P/duet_bench_txn" --systems duet --experiments ycsbt --ops 4 --reads 95 \
      --dists uniform --key-bytes 8 --threads 16 --keys 1000000 --txns 200000 --sets 3 --out "$O/$x-$round" 2>&1 |
      grep -E '^ycsbt' | tee -a "$LOG"
  done
done
