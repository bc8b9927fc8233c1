#!/usr/bin/env bash
# Runs duet_bench_hydralist's thread scaling on the 16-core GPU machine (CPU only), from a pack
# made here by bench/hydralist/gpu-pack.sh, within one device call (about 120 s). Results go to
# $OUT (default /tmp/hl-out): scaling.json (1, 4, 16 threads, one repetition), peak16.json
# (16 threads, three repetitions, Zipf), factor.json (the factor variants at 16 threads).
set -uo pipefail
cd "$(dirname "$0")/../.."
PACK=gpu-pack-hydralist
OUT=${OUT:-/tmp/hl-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$PACK${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B=$PACK/duet_bench_hydralist
export DUET_COMMIT=$(cat $PACK/COMMIT)
(nproc; lscpu | grep -E 'Model name|NUMA node' ; ls /sys/devices/system/node | grep node) > "$OUT/machine.txt" 2>&1
run() { local name=$1; shift; echo "== $name: $*"; timeout "${LIMIT:-70}" "$B" "$@" --out "$OUT/$name.json" > "$OUT/$name.txt" 2>&1; echo "rc $?"; tail -n 60 "$OUT/$name.txt"; }
LIMIT=75 run scaling --keys-int 1000000 --keys-str 400000 --ops 400000 --threads 1,4,16 --reps 1 --rss
LIMIT=25 run peak16 --keys-int 1000000 --keys-str 400000 --ops 400000 --threads 16 --reps 3 --workloads load,a,b,c,e --dists zipf
LIMIT=25 run factor --key-types str --keys-str 400000 --ops 400000 --threads 16 --reps 3 --workloads load,a,b,c,d --dists zipf \
  --systems hydralist,hl-sync,hl-scalar,hl-avx2,hl-nobackoff,hl-2rep
