#!/bin/bash
# usage: lead-repro.sh BIN TAG ; run from repo root on the device
B=$1; T=$2; O=$OUT/$T; mkdir -p $O; P=$((20000 + RANDOM % 20000))
gpu-pack/$B server --port $P --loglevel debug > $O/server.log 2>&1 & S=$!
for i in $(seq 100); do gpu-pack/redis-cli -p $P ping >/dev/null 2>&1 && break; sleep 0.1; done
( while kill -0 $S 2>/dev/null; do date +%T.%N; gpu-pack/redis-cli -p $P info duet | grep -E "router_choice|model_switches|last_switch|io_thread_clients|batches_overlapped|hot_cache"; sleep 1; done ) > $O/info.log 2>&1 &
gpu-pack/redis-benchmark -p $P -t set -c 400 -P 64 -n 8000000 -r 10000000 -d 16 --threads 12 -q > $O/rb-set.txt 2>&1
gpu-pack/duet_bench_net --host 127.0.0.1 -p $P -t 8 -c 400 -P 64 -k 10000000 -d 16 --mix get=95,set=5 -s 20 --warmup 1 --label $T --out $O > $O/net.txt 2>&1; echo "net rc=$?" >> $O/net.txt
kill $S; wait $S
tail -3 $O/net.txt; grep -c . $O/info.log
