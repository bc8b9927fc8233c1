#!/usr/bin/env bash
# BATCH.CALL through `duet server` on the GPU machine, each Epic placement in turn: `cpu` (CPU
# indexing, planning and execution), `gpu` (Epic-CPU: the GPU indexes and plans) and `gpu-exec`
# (each epoch executed on the GPU or the CPU threads by its contention), against one pre-generated
# file of Mix read-modify-writes per workload (uniform keys, and a hot record every txn writes)
# replayed closed loop by duet_bench_replay over many pipelined connections.
#   here:  bench/batch/epic/server-gpu.sh pack   builds duet and duet_bench_replay for sm_90 and
#                                                 packs them with their libraries into gpu-pack-batchcall/
#   there: bench/batch/epic/server-gpu.sh run    (OUT: results folder; TXNS, CONNECTIONS, PIPELINE,
#                                                 CLIENT_THREADS, PLACEMENTS, ROUNDS override the defaults)
# ROUNDS (default 3) runs every cell that many times, the placements in turn within a round, a
# fresh server each; summary.json and the table printed last give each cell's median and range.
set -uo pipefail
cd "$(dirname "$0")/../../.."
P=gpu-pack-batchcall
B=${BUILD:-build-codsv-gpu}
case "${1:-}" in
pack)
  source bench/common/pack_libs.sh
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
  cmake --build "$B" -j "${JOBS:-2}" --target duet duet_bench_replay || exit 1
  rm -rf $P && mkdir -p $P
  cp -L "$B/duet" "$B/bench/net/duet_bench_replay" $P/
  pack_libs $P "$B/duet" "$B/bench/net/duet_bench_replay"
  git rev-parse HEAD > $P/COMMIT
  du -sh $P
  ;;
run)
  OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
  CUBLAS=$(ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13 2>/dev/null | head -1)
  [ -n "$CUBLAS" ] || CUBLAS=$(find / -name libcublas.so.13 -not -path '/proc/*' 2>/dev/null | head -1)
  export LD_LIBRARY_PATH="$PWD/$P:$(dirname "${CUBLAS:-/usr/local/cuda/lib64/x}")"
  export DUET_COMMIT=$(cat $P/COMMIT)
  { nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; nproc; lscpu | grep -E 'Model name'; echo "commit $DUET_COMMIT"; } | tee "$OUT/machine.txt"
  TXNS=${TXNS:-1000000} C=${CONNECTIONS:-256} D=${PIPELINE:-128} T=${CLIENT_THREADS:-8}
  for w in uniform hot; do
    /usr/bin/env python3 bench/batch/epic/batch_call_file.py "$OUT/$w.resp" --txns "$TXNS" --connections "$C" \
      $([ $w = hot ] && echo --hot) || exit 1
  done
  port=7400
  for r in $(seq 1 "${ROUNDS:-3}"); do
  for w in uniform hot; do
    for pl in ${PLACEMENTS:-cpu gpu gpu-exec}; do
      port=$((port + 1)) c="$w-$pl-r$r"
      $P/duet server --port $port --device gpu --database-kinds kv,1=batch --epic-procedures mix \
        --epic-tables t:4:1000000 --epic-placement $pl --epic-epoch-max-wait-us 2000 > "$OUT/server-$c.log" 2>&1 &
      pid=$!
      for _ in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
      timeout 300 $P/duet_bench_replay --commands "$OUT/$w.resp" --connections $C --threads $T --pipeline $D \
        --port $port > "$OUT/replay-$c.json" 2> "$OUT/replay-$c.err"
      echo "$c rc=$? $(cat "$OUT/replay-$c.json")"
      exec 3<>/dev/tcp/127.0.0.1/$port
      printf '*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n*2\r\n$4\r\nINFO\r\n$4\r\nduet\r\n' >&3
      timeout 2 cat <&3 | tr -d '\r' | grep -a "batch_db1_epic" > "$OUT/info-$c.txt"
      exec 3<&-
      cat "$OUT/info-$c.txt"
      kill $pid; wait $pid 2>/dev/null
    done
  done
  done
  rm -f "$OUT"/*.resp
  /usr/bin/env python3 bench/batch/epic/server_summary.py "$OUT"
  ;;
*) sed -n 2,10p "$0"; exit 2 ;;
esac
