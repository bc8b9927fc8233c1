#!/usr/bin/env bash
# Runs, within one device call on the 16-core GPU machine (CPU only), from a pack made here by
# bench/hydralist/gpu-pack.sh:
#  1. the 16-thread point of every workload at the issue's key-set sizes (10^8 integer, 2x10^7
#     string keys), every system, three repetitions, OPS operations per workload (E: OPS/10),
#     each system loaded once in its own process (one invocation per key type and system, each
#     capped); merged into int.json and str.json;
#  2. the factor analysis (thesis Fig. 4.15): the cumulative steps f1-sorted .. f6-backoff and
#     the default, string keys (FACTOR_KEYS), 16 threads, Zipf, a fresh map per repetition
#     (Load timed three times): factor.json;
#  3. the key-set sweep (Fig. 4.18): B, Zipf, string keys, 10^5, 10^6, 10^7 keys, the ordered
#     systems, 16 threads, one load per size and system, three repetitions: sweep.json.
# Everything stops by DEADLINE seconds; a system still running at its cap (or the deadline) is
# killed and keeps the samples it reported (factor and sweep: the cap is per child process, one
# per map). Output in $OUT: run.txt, machine.txt and the files.
# usage: [OUT=dir] [DEADLINE=290] [OPS=2e6] bench/hydralist/gpu-run-16t.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
PACK=gpu-pack-hydralist
OUT=${OUT:-/tmp/hl-out}
DEADLINE=${DEADLINE:-290}
OPS=${OPS:-2e6}
SWEEP_OPS=${SWEEP_OPS:-1e6}
FACTOR_KEYS=${FACTOR_KEYS:-4e6}
mkdir -p "$OUT"
W=$(mktemp -d)
export LD_LIBRARY_PATH="$PWD/$PACK${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B=$PACK/duet_bench_hydralist
export DUET_COMMIT=$(cat $PACK/COMMIT)
(nproc; lscpu | grep -E 'Model name|NUMA node|Flags' | cut -c1-400; ls /sys/devices/system/node | grep node; free -g) > "$OUT/machine.txt" 2>&1
capped() {  # name, cap in seconds, command...
  local name=$1 cap=$2 left=$((DEADLINE - SECONDS))
  shift 2
  ((cap > left)) && cap=$left
  if ((cap < 5)); then echo "== $name: skipped, no time left"; return; fi
  echo "== $name (cap ${cap} s, at ${SECONDS} s)"
  "$@" --child-timeout "$cap" 2>&1 | grep -v '^$'
}
HEAD=(--keys-int "${KEYS_INT:-1e8}" --keys-str "${KEYS_STR:-2e7}" --ops "$OPS" --threads 16 --reps 3 --load-once --fork)
head16() { capped "$1 $2" "$3" "$B" "${HEAD[@]}" --key-types "$1" --systems "$2" --out "$W/$1-$2.json"; }
{
  head16 str hydralist 20
  head16 str tbb 40
  head16 str libcuckoo 15
  head16 str libcds 50
  head16 int hydralist 25
  head16 int tbb 75
  capped "factor" 10 "$B" --key-types str --keys-str "$FACTOR_KEYS" --ops "$OPS" --threads 16 --reps 3 \
    --dists zipf --systems f1-sorted,f2-fp,f3-simd,f4-async,f5-2rep,f6-backoff,hydralist --fork --out "$OUT/factor.json"
  capped "sweep" 20 "$B" --key-types none --sweep "${SWEEP:-1e5,1e6,1e7}" --ops "$SWEEP_OPS" --threads 16 --reps 3 \
    --systems hydralist,tbb,libcds --load-once --fork --out "$OUT/sweep.json"
  head16 int libcuckoo 20
  head16 int libcds 90
  echo "== done at ${SECONDS} s"
} 2>&1 | tee "$OUT/run.txt"
for kt in str int; do
  ls "$W"/$kt-*.json >/dev/null 2>&1 && python3 bench/hydralist/merge.py "$OUT/$kt.json" "$W"/$kt-*.json
done
ls -l "$OUT"
