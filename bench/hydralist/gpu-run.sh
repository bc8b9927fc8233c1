#!/usr/bin/env bash
# Runs duet_bench_hydralist at the issue's key-set sizes on the 16-core GPU machine (CPU only),
# from a pack made here by bench/hydralist/gpu-pack.sh, within one device call: 2x10^7 string
# and 10^8 integer keys, threads 1, 4, 16, three repetitions, each system loaded once in its
# own process (--load-once --fork: its peak RSS after the load is recorded too). One invocation
# per (key type, system), each with a time cap (--child-timeout) and all within DEADLINE
# seconds: a system still running at its cap is killed and keeps the samples it reported.
# Results go to $OUT (default /tmp/hl-out): str.json and int.json (merged by
# bench/hydralist/merge.py), run.txt (all output), machine.txt.
# usage: [OUT=dir] [DEADLINE=265] [OPS=5e5] [KEYS_INT=1e8] [KEYS_STR=2e7] [THREADS=1,4,16]
#        bench/hydralist/gpu-run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
PACK=gpu-pack-hydralist
OUT=${OUT:-/tmp/hl-out}
DEADLINE=${DEADLINE:-265}
OPS=${OPS:-5e5}
KEYS_INT=${KEYS_INT:-1e8}
KEYS_STR=${KEYS_STR:-2e7}
THREADS=${THREADS:-1,4,16}
mkdir -p "$OUT"
W=$(mktemp -d)
export LD_LIBRARY_PATH="$PWD/$PACK${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B=$PACK/duet_bench_hydralist
export DUET_COMMIT=$(cat $PACK/COMMIT)
(nproc; lscpu | grep -E 'Model name|NUMA node'; ls /sys/devices/system/node | grep node; free -g) > "$OUT/machine.txt" 2>&1
COMMON=(--keys-int "$KEYS_INT" --keys-str "$KEYS_STR" --ops "$OPS" --threads "$THREADS" --reps 3 --load-once --fork)
run() {  # key type, system, cap in seconds
  local left=$((DEADLINE - SECONDS)) cap=$3
  ((cap > left)) && cap=$left
  if ((cap < 5)); then echo "== $1 $2: skipped, no time left"; return; fi
  echo "== $1 $2 (cap ${cap} s, at ${SECONDS} s)"
  "$B" "${COMMON[@]}" --key-types "$1" --systems "$2" --child-timeout "$cap" --out "$W/$1-$2.json" 2>&1 |
    grep -v '^$'
}
{
  run str hydralist 20
  run str tbb 25
  run str libcuckoo 12
  run str libcds 30
  run int hydralist 40
  run int tbb 70
  run int libcuckoo 25
  run int libcds 70
  echo "== done at ${SECONDS} s"
} 2>&1 | tee "$OUT/run.txt"
for kt in str int; do
  ls "$W"/$kt-*.json >/dev/null 2>&1 && python3 bench/hydralist/merge.py "$OUT/$kt.json" "$W"/$kt-*.json
done
ls -l "$OUT"
