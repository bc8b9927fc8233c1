#!/usr/bin/env bash
# A/B run on the GPU machine, from the repository root: the CODS GPU tests of the new build, then
# duet_bench_cods's GPU rows of two builds alternating (base, new, base, new) on the same
# pre-generated work, so both see the same machine in the same run.
#
# Expects gpu-pack-codsx/ (ignored) holding new.tar.gz and base.tar.gz, each a folder of
# duet_bench_cods (new: and duet_gpu_tests) with the shared libraries it needs, packed here by
#   bench/cods/gpu-ab.sh --pack NEW_BUILD_DIR BASE_BUILD_DIR
# Or, on the GPU machine, `bench/cods/gpu-ab.sh --build-here BASE_SRC` builds both there first
# (this tree and BASE_SRC, a source tree made by `git archive`, each into its build-gpu/, at
# sm_90) and packs them; DUET_COMMIT and BASE_COMMIT name the two sides (else git does).
# Logs and JSON go to $OUT (default bench/results/cods-h100-atomic128/after-compile-time-switches).
# ROWS (a --gpu-filter list) and SHAPES pick the rows; ROUNDS the number of base/new pairs.
set -uo pipefail
cd "$(dirname "$0")/../.."
pack=gpu-pack-codsx
if [ "${1:-}" = "--build-here" ]; then
  base_src=${2:?usage: bench/cods/gpu-ab.sh --build-here BASE_SRC}
  export PATH="/usr/local/cuda/bin:$PATH"
  # The base side needs only the benchmark; the tests run on the new side alone.
  for t in . "$base_src"; do
    targets=(duet_bench_cods); [ "$t" = . ] && targets+=(duet_gpu_tests)
    (cmake -S "$t" -B "$t/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DDUET_TESTS=ON -DDUET_BENCH=ON && cmake --build "$t/build-gpu" -j "$(nproc)" --target "${targets[@]}") \
      > "$t/build-gpu.log" 2>&1 &
  done
  wait
  for t in . "$base_src"; do tail -n 2 "$t/build-gpu.log"; done
  "$0" --pack build-gpu "$base_src/build-gpu" || exit 1
fi
if [ "${1:-}" = "--pack" ]; then
  set -e
  rm -rf "$pack" && mkdir -p "$pack"
  for side in new base; do
    build=$2; [ "$side" = base ] && build=$3
    d=$(mktemp -d)/$side && mkdir -p "$d"
    bins=("$build/bench/duet_bench_cods")
    [ "$side" = new ] && bins+=("$build/tests/duet_gpu_tests")
    for b in "${bins[@]}"; do cp -L "$b" "$d/"; done
    for b in "${bins[@]}"; do
      ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)[.-]' || true
    done | sort -u | while read -r lib; do cp -L "$lib" "$d/"; done
    strip --strip-debug "$d"/* 2>/dev/null || true
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
    # DUET_COMMIT and BASE_COMMIT, when set, name the sides (a tree made by git archive has no
    # history of its own: git would name the repository around it).
    named=${DUET_COMMIT:-}; [ "$side" = base ] && named=${BASE_COMMIT:-}
    if [ -n "$named" ]; then echo "$named" > "$d/COMMIT"; else git -C "$src" rev-parse --short HEAD > "$d/COMMIT"; fi
    tar -czf "$pack/$side.tar.gz" -C "$(dirname "$d")" "$side"
    rm -rf "$(dirname "$d")"
  done
  du -sh "$pack"
  exit 0
fi
out=${OUT:-bench/results/cods-h100-atomic128/after-compile-time-switches}
mkdir -p "$out"
work=$(mktemp -d)
for side in new base; do tar -xzf "$pack/$side.tar.gz" -C "$work"; done
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
echo "new $(cat "$work/new/COMMIT") base $(cat "$work/base/COMMIT")" >> "$out/gpu.txt"
LD_LIBRARY_PATH="$work/new" timeout "${TESTS_S:-60}" "$work/new/duet_gpu_tests" --gtest_filter='*Cods*' \
  > "$out/tests.log" 2>&1
echo "tests rc=$?" >> "$out/tests.log"
tail -n 3 "$out/tests.log"
# Registers, stack and local memory per thread of every CODS kernel of both builds.
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for side in base new; do
  echo "== $side $(cat "$work/$side/COMMIT")"
  "$cuobjdump" --dump-resource-usage "$work/$side/duet_bench_cods" 2>&1 | grep -A1 -E "Function .*4cods" | grep -v "^--"
done > "$out/resource-usage.txt"
rows=${ROWS:-list-ew-k14-g16,list-fa-k14-g16,hash-fa-k14-g16,hash-ew-k14-g16,hash-fa-k14-g1,hash-fa-k14-mixed-g16,hash-ew-k14-mixed-g16,lslab}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for side in base new; do
    echo "== round $round $side $(cat "$work/$side/COMMIT")" | tee -a "$out/bench.log"
    LD_LIBRARY_PATH="$work/$side" DUET_COMMIT=$(cat "$work/$side/COMMIT") timeout "${BENCH_S:-90}" \
      "$work/$side/duet_bench_cods" --figures gpu --gpu-shapes "${SHAPES:-list,hash}" --gpu-filter "$rows" \
      --out "$out/$side-$round.json" >> "$out/bench.log" 2>&1
    echo "rc=$?" >> "$out/bench.log"
  done
done
grep -E "^==|^gpu " "$out/bench.log"
rm -rf "$work"
