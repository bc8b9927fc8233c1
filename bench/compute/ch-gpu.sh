#!/usr/bin/env bash
# CH-benCHmark on the 16-core GPU machine (docs/compute.md, "CH through the server"), embedded,
# through `duet server` and beside RocksDB, from a CPU build made here (the GPU machine lacks
# Debian's RocksDB and OpenBLAS; CH's queries run on the CPU, as in the seed).
#   here:  bench/compute/ch-gpu.sh pack   packs duet, duet_bench_ch and libduet_ch_proc.so from
#                                         $BUILD (default build-cpu: configure it with
#                                         -DDUET_CUDA=OFF and build those targets first) with the
#                                         shared libraries they need into gpu-pack-ch/; from a CUDA
#                                         build (-DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90) also
#                                         duet_compute_gpu_tests, and the order-line mirror's
#                                         queries then run on the GPU (docs/compute.md, "Column
#                                         mirror")
#   there: bench/compute/ch-gpu.sh run    the GPU compute tests when packed (results appended to
#                                         machine.txt), then the benchmark
#                                         with $ARGS (default: 10 warehouses, the seed mix, 1, 8
#                                         and 16 worker threads, duet, server and rocksdb); log and
#                                         JSON to $OUT (default gpu-out); $RUNS more argument sets
#                                         separated by ';' run after it, to ch-2.json, ch-3.json ...;
#                                         with $PROFILE (arguments for one more run) and perf packed
#                                         (PACK_PERF=1 at pack time), that run under `perf record`
#                                         (cpu-clock, flat; recording from PROFILE_DELAY_MS on, or
#                                         with PROFILE_WINDOW="AFTER SPAN" only from AFTER s to
#                                         AFTER + SPAN s, to leave the load and the checks and
#                                         teardown after the run out) and its report to
#                                         $OUT/profile.txt
#   there: bench/compute/ch-gpu.sh ab     alternates a base build ($P/base/duet_bench_ch, packed
#                                         by hand from an older build) with this one, $ROUNDS
#                                         times (default 2), each run with $AB_ARGS; every run's
#                                         JSON and log, with its peak resident memory sampled
#                                         once a second, to $OUT/ab.tgz, and a summary (the
#                                         table rows and peak RSS per run) to $OUT/ab.txt; the
#                                         base runs with the environment $BASE_ENV (e.g. a
#                                         MALLOC_CONF: an A/B of one build under two settings,
#                                         with the same binary packed as base)
set -euo pipefail
cd "$(dirname "$0")/../.."
P=gpu-pack-ch
case "${1:-}" in
  pack)
    B=${BUILD:-build-cpu}
    # shellcheck source=bench/common/pack_libs.sh
    . bench/common/pack_libs.sh
    rm -rf $P && mkdir -p $P/bench $P/lib
    cp -L "$B/duet" $P/
    cp -L "$B/bench/duet_bench_ch" "$B/bench/libduet_ch_proc.so" $P/bench/
    bins=("$P/duet" "$P/bench/duet_bench_ch")
    if [ -e "$B/tests/compute/duet_compute_gpu_tests" ]; then
      mkdir -p $P/tests
      cp -L "$B/tests/compute/duet_compute_gpu_tests" $P/tests/
      bins+=("$P/tests/duet_compute_gpu_tests")
    fi
    pack_libs $P/lib "${bins[@]}"
    if [ "${PACK_PERF:-0}" = 1 ]; then  # this machine's perf, for PROFILE runs there
      mkdir -p $P/perf/lib
      cp -L "$(command -v perf)" $P/perf/
      pack_libs $P/perf/lib $P/perf/perf
      xz -T2 -6 $P/perf/perf $P/perf/lib/*
    fi
    # With perf packed, symbol tables stay (perf report names functions from them).
    if [ "${PACK_PERF:-0}" = 1 ]; then strip --strip-debug "${bins[@]}" $P/bench/libduet_ch_proc.so
    else strip "${bins[@]}" $P/bench/libduet_ch_proc.so; fi
    # The tree that travels holds 64 MiB: the largest files travel compressed.
    for f in $P/lib/libopenblas.so.0 "${bins[@]}"; do
      if [ -e "$f" ]; then xz -T2 -6 "$f"; fi
    done
    git rev-parse HEAD > $P/COMMIT
    du -sh $P
    ;;
  run)
    find "$P" -name '*.xz' -exec xz -d {} +
    export LD_LIBRARY_PATH=$PWD/$P/lib:${LD_LIBRARY_PATH:-}
    export DUET_COMMIT
    DUET_COMMIT=$(cat $P/COMMIT)
    OUT=${OUT:-gpu-out}
    mkdir -p "$OUT"
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true; lscpu | grep -E 'Model name|^CPU\(s\)'; } |
      tee "$OUT/machine.txt"
    # One file for the machine and the tests: a call returns eight files, and RUNS may fill them.
    if [ -x $P/tests/duet_compute_gpu_tests ]; then
      $P/tests/duet_compute_gpu_tests 2>&1 | grep -E '^\[ *(OK|FAILED|PASSED|SKIPPED) *\]|Failure|mirror:' >> "$OUT/machine.txt"
    fi
    # shellcheck disable=SC2086  # ARGS is a list of flags
    $P/bench/duet_bench_ch ${ARGS:---warehouses 10 --mixes seed --threads 1,8,16 --reps 3 --load-threads 8 --systems duet,server,rocksdb} \
      --out "$OUT/ch.json" 2>&1 | tee "$OUT/ch.txt"
    n=2
    IFS=';' read -ra more <<< "${RUNS:-}"
    for a in "${more[@]}"; do
      # shellcheck disable=SC2086
      $P/bench/duet_bench_ch $a --out "$OUT/ch-$n.json" 2>&1 | tee "$OUT/ch-$n.txt"
      n=$((n + 1))
    done
    if [ -n "${PROFILE:-}" ] && [ -x $P/perf/perf ]; then
      # The packed perf with its own libraries.
      perf_packed() { LD_LIBRARY_PATH=$PWD/$P/perf/lib:$LD_LIBRARY_PATH $P/perf/perf "$@"; }
      # shellcheck disable=SC2086
      if [ -n "${PROFILE_WINDOW:-}" ]; then
        # Only the worker phase: attach after the first number of seconds, for the second, so
        # that neither the load nor the checks and teardown after the run are in the profile.
        read -r after span <<< "$PROFILE_WINDOW"
        $P/bench/duet_bench_ch $PROFILE --out "$OUT/ch-profile.json" > "$OUT/ch-profile.txt" 2>&1 &
        pid=$!
        sleep "$after"
        perf_packed record -e cpu-clock -F 999 -p $pid -o "$OUT/perf.data" -- sleep "$span" > /dev/null 2>&1 || true
        wait $pid || true
      else
        perf_packed record -e cpu-clock -F 999 -D "${PROFILE_DELAY_MS:-0}" -o "$OUT/perf.data" \
          $P/bench/duet_bench_ch $PROFILE --out "$OUT/ch-profile.json" > "$OUT/ch-profile.txt" 2>&1 || true
      fi
      { echo "perf record -e cpu-clock -F 999: duet_bench_ch $PROFILE"; grep -E '^(seed|tpcc)' "$OUT/ch-profile.txt" || true
        perf_packed report -i "$OUT/perf.data" --no-children \
          --sort dso,sym --percent-limit 0.3 --stdio 2>&1 | grep -v '^#' | grep -v '^$' | head -120; } > "$OUT/profile.txt"
      rm -f "$OUT/perf.data" "$OUT/ch-profile.txt"
    fi
    ;;
  ab)
    find "$P" -name '*.xz' -exec xz -d {} +
    export LD_LIBRARY_PATH=$PWD/$P/lib:${LD_LIBRARY_PATH:-}
    OUT=${OUT:-gpu-out}
    [ -x $P/base/duet_bench_ch ] || { echo "ch-gpu.sh ab: no $P/base/duet_bench_ch" >&2; exit 2; }
    mkdir -p "$OUT/ab"
    for i in $(seq 1 "${ROUNDS:-2}"); do
      for which in base new; do
        bin=$P/bench/duet_bench_ch
        [ $which = base ] && bin=$P/base/duet_bench_ch
        run_env=()
        [ $which = base ] && read -r -a run_env <<< "${BASE_ENV:-}"
        # shellcheck disable=SC2086  # AB_ARGS is a list of flags
        env "${run_env[@]}" $bin ${AB_ARGS:---warehouses 10 --mixes seed --threads 16 --reps 1 --load-threads 8 --systems duet} \
          --out "$OUT/ab/$which-$i.json" > "$OUT/ab/$which-$i.txt" 2>&1 &
        pid=$!
        peak=0
        while kill -0 $pid 2>/dev/null; do
          rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
          [ "${rss:-0}" -gt "$peak" ] && peak=$rss
          sleep 1
        done
        wait $pid || true
        { echo "$which $i: peak RSS $((peak / 1024)) MiB"; grep -E '^(seed|tpcc) ' "$OUT/ab/$which-$i.txt" || tail -3 "$OUT/ab/$which-$i.txt"; } |
          tee -a "$OUT/ab.txt"
      done
    done
    tar -C "$OUT" -czf "$OUT/ab.tgz" ab && rm -rf "$OUT/ab"
    ;;
  *) echo "usage: $0 pack|run|ab" >&2; exit 2 ;;
esac
