#!/usr/bin/env bash
# Where the embedded OLDA CPU engine's time goes as payment threads are added: duet_bench_olda
# (CPU engine, one inference per transaction, 10^4 users, no older payments) at each thread
# count of $THREADS_LIST (default "4 16"), unprofiled and then under `perf record`, with a flat
# profile of each. From a CPU build made here:
#   here:  bench/compute/olda-profile.sh pack   packs $BUILD/bench/duet_bench_olda (default
#                                               build-cpu) and its libraries into gpu-pack-oldap/
#   there: bench/compute/olda-profile.sh run    needs perf-pack/ beside it; writes log.txt,
#                                               machine.txt, the JSON files and perf-t*.txt to $OUT;
#                                               with CALLERS=1 also callers-t*.txt, a profile with
#                                               call chains (DWARF unwinding) of each count; with
#                                               NO_PERF=1 the unprofiled runs only
#   there: bench/compute/olda-profile.sh ab     a base build in $P/base/ against this one
set -uo pipefail
P=gpu-pack-oldap
case "${1:-}" in
  pack)
    # shellcheck source=bench/common/pack_libs.sh
    . bench/common/pack_libs.sh
    rm -rf $P && mkdir -p $P && cp "${BUILD:-build-cpu}/bench/duet_bench_olda" $P/ && pack_libs $P $P/duet_bench_olda
    ;;
  run)
    # shellcheck source=bench/common/machine_info.sh
    . bench/common/machine_info.sh
    O=${OUT:-out-olda-profile}
    start_run "$O" "$P"
    B=("$P/duet_bench_olda" --users 10^4 --extra 0 --systems cpu --modes per_txn)
    for t in ${THREADS_LIST:-4 16}; do
      echo "=== $t threads" | tee -a "$LOG"
      timeout 120 "${B[@]}" --threads "$t" --out "$O/olda-t$t.json" 2>&1 | tail -4 | tee -a "$LOG"
      grep -oE '"[a-z_]*lock_wait[a-z_]*_per_txn": [0-9.e+-]*' "$O/olda-t$t.json" | tee -a "$LOG"
      [ -n "${NO_PERF:-}" ] && continue
      perf_flat 999 comm,symbol "$O/perf-t$t.txt" "${B[@]}" --threads "$t" --out "$O/olda-perf-t$t.json" > /dev/null
      grep '%' "$O/perf-t$t.txt" | head -25 | tee -a "$LOG"
      if [ -n "${CALLERS:-}" ]; then  # who calls sched_yield and the futex waits (DWARF unwinding)
        LD_LIBRARY_PATH=perf-pack:$LD_LIBRARY_PATH timeout 200 perf-pack/perf record -F 199 --call-graph dwarf,16384 \
          -o "$O/perf.data" -- "${B[@]}" --threads "$t" --out "$O/olda-callers-t$t.json" > /dev/null 2>&1
        LD_LIBRARY_PATH=perf-pack timeout 300 perf-pack/perf report -i "$O/perf.data" --no-children --sort symbol \
          -G --stdio --percent-limit 2 2>/dev/null | grep -v '^$' | head -300 > "$O/callers-t$t.txt"
        rm -f "$O/perf.data"
      fi
    done
    ;;
  ab)
    # A base build ($P/base/duet_bench_olda, packed by hand) against this one, alternated over
    # $ROUNDS rounds (default 2) at each count of $THREADS_LIST; the table lines and the lock
    # waits per transaction to log.txt.
    # shellcheck source=bench/common/machine_info.sh
    . bench/common/machine_info.sh
    O=${OUT:-out-olda-ab}
    start_run "$O" "$P"
    for round in $(seq 1 "${ROUNDS:-2}"); do
      order=(base new)
      [ $((round % 2)) = 0 ] && order=(new base)
      for t in ${THREADS_LIST:-4 16}; do
        for which in "${order[@]}"; do
          bin=$P/duet_bench_olda
          [ "$which" = base ] && bin=$P/base/duet_bench_olda
          echo "=== $which $t threads, round $round" | tee -a "$LOG"
          timeout 120 "$bin" --users 10^4 --extra 0 --systems cpu --modes per_txn --threads "$t" \
            --out "$O/$which-t$t-$round.json" 2>&1 | grep -E '^users' | tee -a "$LOG"
          grep -oE '"[a-z_]*lock_wait[a-z_]*_per_txn": [0-9.e+-]*' "$O/$which-t$t-$round.json" | head -3 | tee -a "$LOG"
        done
      done
    done
    ;;
  *) echo "usage: $0 pack|run|ab" >&2; exit 2 ;;
esac
