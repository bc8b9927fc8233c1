#!/usr/bin/env bash
# YCSB-T (4 ops, $READS% reads (default 95), $DISTS keys (default uniform), 10^6 8-byte keys,
# 16 threads, duet only) on two sides alternated over $ROUNDS rounds (default 3): side a runs
# $BIN_A under the environment $ENV_A (default empty), side b $BIN_B under $ENV_B (default
# MALLOC_CONF=thp:always,metadata_thp:always, jemalloc's transparent huge pages for its arenas).
# Both programs default to $PACK/duet_bench_txn (PACK default gpu-pack-clock/, from
# `bench/txn/clock-ab.sh pack`): an A/B of two settings, or of two builds with BIN_A/BIN_B.
# Writes log.txt, machine.txt and the JSON files under $OUT.
set -uo pipefail
P=${PACK:-gpu-pack-clock}
O=${OUT:-out-env-ab}
ROUNDS=${ROUNDS:-3}
# shellcheck source=bench/common/machine_info.sh
. bench/common/machine_info.sh
start_run "$O" "$P"
declare -A ENVS=([a]="${ENV_A:-}" [b]="${ENV_B-MALLOC_CONF=thp:always,metadata_thp:always}")
declare -A BINS=([a]="${BIN_A:-$P/duet_bench_txn}" [b]="${BIN_B:-$P/duet_bench_txn}")
for round in $(seq 1 "$ROUNDS"); do
  order=(a b)
  [ $((round % 2)) = 0 ] && order=(b a)
  for x in "${order[@]}"; do
    echo "=== $x (${BINS[$x]}, ${ENVS[$x]:-default environment}) round $round" | tee -a "$LOG"
    # shellcheck disable=SC2086
    env ${ENVS[$x]} timeout 300 "${BINS[$x]}" --systems duet --experiments ycsbt --ops 4 --reads "${READS:-95}" \
      --dists "${DISTS:-uniform}" --key-bytes 8 --threads 16 --keys 1000000 --txns 200000 --sets 3 --out "$O/$x-$round" 2>&1 |
      grep -E '^ycsbt' | tee -a "$LOG"
  done
done
