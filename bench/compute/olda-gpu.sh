#!/usr/bin/env bash
# The OLDA benchmark on the GPU machine (docs/compute.md, "OLDA").
#   here:  bench/compute/olda-gpu.sh pack   builds duet_bench_olda and duet_olda_tests for sm_90
#                                           (nvcc present, no GPU needed) and packs them, with the
#                                           non-system shared libraries they need, into gpu-pack-olda/
#   there: bench/compute/olda-gpu.sh run    the OLDA suite, then the benchmark (GPU and CPU); logs
#                                           and the result JSON go to $OUT (default gpu-out)
#   there: bench/compute/olda-gpu.sh sweep  embedded OLDA over thread counts (THREADS_LIST, USERS)
#   here:  bench/compute/olda-gpu.sh pack-server   packs duet, the benchmark, the OLDA procedure,
#                                           redis-server and the redis-py package (the GPU machine
#                                           has Python and numpy but not redis-py) into gpu-pack-oldas/
#   there: bench/compute/olda-gpu.sh run-server    OLDA through the server (olda_server.py)
#                                           against the FeDB-style peer (olda_fedb.py) on the same
#                                           exported work, at USERS (default "10 10000") with
#                                           CLIENTS client processes and THREADS server threads
#                                           (NATIVE=1: the C++ replay client instead, see below;
#                                           TAG suffixes the output names; PEER=0 skips the peer)
# BUILD, JOBS (pack) and ARGS (extra benchmark flags, run) override the defaults.
set -euo pipefail
cd "$(dirname "$0")/../.."
P=gpu-pack-olda
# pack_into DIR TARGETS...: builds TARGETS in $BUILD (CUDA for sm_90) and copies the files named
# in the array `bins` (set by the caller, paths into $B) into DIR with the non-system shared
# libraries they need (cuBLAS stays: the GPU machine has it), openblas compressed.
pack_into() {
  local dir=$1; shift
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
  cmake --build "$B" -j "${JOBS:-2}" --target "$@"
  rm -rf "$dir" && mkdir -p "$dir"
  for b in "${bins[@]}"; do cp -L "$b" "$dir"/; done
  for b in "${bins[@]}"; do
    ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)[.-]|libcublas' || true
  done | sort -u | while read -r lib; do cp -L "$lib" "$dir"/; done
  strip --strip-debug "$dir"/* 2>/dev/null || true
  [ -e "$dir"/libopenblas.so.0 ] && xz -T2 -6 "$dir"/libopenblas.so.0  # 36 MB: travels compressed
  git rev-parse HEAD > "$dir"/COMMIT
}

# unpack_libs DIR: on the GPU machine, puts DIR's libraries in $L and sets LIBS to the path
# the packed binaries need (those libraries and the machine's cuBLAS).
unpack_libs() {
  L=/tmp/olda-libs
  mkdir -p $L
  cp "$1"/*.so* $L/ 2>/dev/null
  for f in "$1"/*.xz; do [ -e "$f" ] && xz -dc "$f" > $L/$(basename "$f" .xz); done
  CUBLAS=$(ls /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13 2>/dev/null | head -1)
  [ -n "$CUBLAS" ] || CUBLAS=$(find / -name libcublas.so.13 -not -path '/proc/*' 2>/dev/null | head -1)
  LIBS=$L:$(dirname "${CUBLAS:-/usr/local/cuda/lib64/x}")
  export DUET_COMMIT=$(cat "$1"/COMMIT)
  OUT=${OUT:-gpu-out}
  mkdir -p "$OUT"
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep -E 'Model name|^CPU\(s\)'; } | tee $OUT/machine.txt
}

case "${1:-}" in
pack)
  B=${BUILD:-/tmp/build-olda-gpu}
  bins=("$B/tests/compute/duet_olda_tests" "$B/bench/duet_bench_olda")
  pack_into $P duet_olda_tests duet_bench_olda
  du -sh $P
  ;;
pack-server)
  B=${BUILD:-/tmp/build-olda-gpu}
  P=gpu-pack-oldas
  bins=("$B/duet" "$B/bench/duet_bench_olda" "$B/bench/libduet_olda_proc.so" "$B/bench/net/duet_bench_replay" /usr/bin/redis-server)
  pack_into $P duet duet_bench_olda duet_olda_proc duet_bench_replay
  mkdir -p $P/py
  for m in redis packaging; do cp -r "$(/usr/bin/python3 -c "import $m, os; print(os.path.dirname($m.__file__))")" $P/py/; done
  find $P/py -name __pycache__ -prune -exec rm -rf {} +
  du -sh $P
  ;;
run-server)
  set +e
  P=gpu-pack-oldas
  unpack_libs $P
  # The packed libraries reach only the packed binaries (wrappers), not the machine's Python.
  for b in duet duet_bench_olda redis-server; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$LIBS" "$PWD/$P/$b" > $L/$b && chmod +x $L/$b
  done
  export PYTHONPATH=$PWD/$P/py
  for u in ${USERS:-10 10000}; do
    W=/tmp/olda-work-$u
    mkdir -p $W
    $L/duet_bench_olda --users $u --payments ${PAYMENTS:-2^15} --export $W | tail -1
    native=()
    # NATIVE=1: the C++ replay client (CONNECTIONS, CLIENT_THREADS, PIPELINE) instead of Python clients.
    [ -n "${NATIVE:-}" ] && native=(--native-client $P/duet_bench_replay --connections ${CONNECTIONS:-64}
      --client-threads ${CLIENT_THREADS:-4} --pipeline ${PIPELINE:-1})
    timeout ${T:-150} ${PYTHON:-python3} bench/compute/olda_server.py --duet $L/duet --proc $P/libduet_olda_proc.so --work $W \
      --clients ${CLIENTS:-12} --threads ${THREADS:-4} --reps ${REPS:-3} "${native[@]}" --out $OUT/olda-server-users$u${TAG:-}.json 2>&1 | tee $OUT/server-users$u${TAG:-}.txt
    # PEER=0 leaves out the FeDB-style peer.
    [ "${PEER:-1}" = 0 ] && continue
    timeout ${T:-150} ${PYTHON:-python3} bench/compute/olda_fedb.py --work $W --redis-server $L/redis-server \
      --clients ${CLIENTS:-12} --reps ${REPS:-3} --out $OUT/olda-fedb-users$u.json 2>&1 | tee $OUT/fedb-users$u.txt
  done
  ;;
sweep)
  # Embedded OLDA at each thread count of $THREADS_LIST (default 1 2 4 8 12 16), $USERS users
  # (default 10^4), CPU and GPU engines, per-transaction inference and the batcher; one JSON per
  # thread count, tarred into $OUT/sweep.tgz (bench/compute/plot_olda.py draws them).
  set +e
  unpack_libs $P
  export LD_LIBRARY_PATH=$LIBS:${LD_LIBRARY_PATH:-}
  mkdir -p $OUT/sweep
  for t in ${THREADS_LIST:-1 2 4 8 12 16}; do
    timeout ${T:-100} $P/duet_bench_olda --users ${USERS:-10^4} --threads $t --extra 0 --systems cpu,gpu \
      --modes per_txn,batcher --out $OUT/sweep/olda-t$t.json 2>&1 | tee -a $OUT/sweep.txt
  done
  tar -C $OUT -czf $OUT/sweep.tgz sweep && rm -rf $OUT/sweep
  ;;
run)
  set +e
  unpack_libs $P
  export LD_LIBRARY_PATH=$LIBS:${LD_LIBRARY_PATH:-}
  ( time timeout 60 $P/duet_olda_tests --gtest_brief=1 ) > $OUT/olda_tests.txt 2>&1
  echo "olda tests rc $?" | tee -a $OUT/olda_tests.txt
  tail -4 $OUT/olda_tests.txt
  timeout ${T:-400} $P/duet_bench_olda ${ARGS:-} --out $OUT/olda-h100.json 2>&1 | tee $OUT/bench.txt
  echo "bench rc ${PIPESTATUS[0]}"
  # 16 threads (every core) at the default 10^4 users.
  timeout ${T2:-100} $P/duet_bench_olda --users 10^4 --threads 16 --extra none ${ARGS:-} --out $OUT/olda-h100-t16.json 2>&1 | tee $OUT/bench-t16.txt
  echo "bench t16 rc ${PIPESTATUS[0]}"
  ;;
*)
  echo "usage: bench/compute/olda-gpu.sh pack|run|sweep|pack-server|run-server" >&2
  exit 2
  ;;
esac
