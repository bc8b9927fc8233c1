#!/bin/bash
# Builds the baseline and the new tree with CUDA (sm_90), then alternates kv benchmark runs.
set -u
cd "$(dirname "$0")"  # beside it: base/ and new/, the two source trees
for v in base new; do
  (cmake -S $v -B b-$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON -DDUET_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90 > cfg-$v.log 2>&1 && ninja -C b-$v -j16 duet > build-$v.log 2>&1) &
done
wait
for v in base new; do tail -2 build-$v.log; ls -la b-$v/duet || { tail -40 cfg-$v.log; tail -60 build-$v.log; }; done
cp build-*.log $OUT/ 2>/dev/null
bench() {  # name, then options
  local name=$1; shift
  for rep in 1 2; do
    for v in base new; do
      echo "=== $name $v rep $rep" >> $OUT/$name.txt
      b-$v/duet bench kv "$@" --repeat 1 --systems kvg,kvcg --out res-$name-$v-$rep.json >> $OUT/$name.txt 2>&1
    done
  done
}
nvidia-smi -L
bench gpu-pipe --device gpu --workload B --theta 0.99 --threads 12 --batch 2048 --pipeline 8 --trace 1048576 --prefill 10^7 --warmup 5000000 --seconds 3 --threshold 0.005
bench cpu-closed --device cpu --workload B --theta 0.99 --threads 8 --batch 512 --trace 1048576 --key-range 10^8 --prefill 10^6 --warmup 2000000 --seconds 3
bench gpu-closed --device gpu --workload B --theta 0.99 --threads 12 --batch 512 --trace 1048576 --prefill 10^7 --warmup 5000000 --seconds 3 --threshold 0.005
