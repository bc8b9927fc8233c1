#!/usr/bin/env bash
# SNAPSHOT of one range of 10^6 pairs, a base build against the builds under test, alternated, on
# a many-core machine; then a profile of the build under test. Expects $PACK (default
# gpu-pack-snap/) with duet_bench_txn_TAG for each TAG of $TAGS (default "base new") and their
# shared libraries, and perf-pack/ (Debian's perf and its libraries) for the profile of
# duet_bench_txn_new (skipped without it or with NO_PROFILE set). $NAMES picks configurations.
# Configurations: p16w15, a pool of 16 beside 15 writers (the 16-core target's); p16w1, a pool of
# 16 beside one writer; p1w1, one SNAPSHOT thread beside one writer.
# The profiled runs take 40 sets, so the reads outweigh the load of the keys.
# Writes log.txt, machine.txt, one JSON file per run and perf-*.txt under $OUT.
set -uo pipefail
# shellcheck source=bench/common/machine_info.sh
. bench/common/machine_info.sh
P=${PACK:-gpu-pack-snap}
O=${OUT:-out-snapshot-ab}
ROUNDS=${ROUNDS:-2}
start_run "$O" "$P"
S=(--systems duet --keys 1000000 --sets 5 --experiments snapshot --snapshot-shapes range)
declare -A CFG=([p16w15]="--threads 16 --snapshot-threads 16" [p16w1]="--threads 2 --snapshot-threads 16"
                [p1w1]="--threads 2 --snapshot-threads 1")
run() {  # tag name round
  local tag=$1 name=$2 round=$3
  # shellcheck disable=SC2086
  echo "=== $tag $name $round: duet_bench_txn ${S[*]} ${CFG[$name]}" | tee -a "$LOG"
  # shellcheck disable=SC2086
  timeout 90 "$P/duet_bench_txn_$tag" "${S[@]}" ${CFG[$name]} --out "$O/$tag-$name-$round" 2>&1 |
    grep -E '^snapshot' | tee -a "$LOG"
}
read -r -a tags <<< "${TAGS:-base new}"
for round in $(seq 1 "$ROUNDS"); do
  order=("${tags[@]}")
  if [ $((round % 2)) = 0 ]; then  # even rounds run the builds in reverse order
    order=()
    for ((i = ${#tags[@]} - 1; i >= 0; i--)); do order+=("${tags[$i]}"); done
  fi
  for name in ${NAMES:-p16w15 p16w1 p1w1}; do
    for tag in "${order[@]}"; do run "$tag" "$name" "$round"; done
  done
done
if [ -z "${NO_PROFILE:-}" ] && [ -x perf-pack/perf ]; then
  for name in p16w1 p16w15; do
    echo "=== perf record new $name" | tee -a "$LOG"
    # shellcheck disable=SC2086
    perf_flat 499 comm,symbol "$O/perf-$name.txt" "$P/duet_bench_txn_new" "${S[@]}" ${CFG[$name]} --sets 40 \
      --out "$O/perf-run-$name" | grep -E '^snapshot' | tee -a "$LOG"
    head -30 "$O/perf-$name.txt" | tee -a "$LOG"
  done
fi
