#!/usr/bin/env bash
# The 2-core measurement of piece splitting (docs/epic.md, "Piece splitting"): the CPU twin with
# whole txns and with pieces (YCSB: each op a piece; TPC-C: each Payment in three pieces), beside
# the serial executor on the whole txns. YCSB runs both in one program run (whole, then pieces,
# per workload); TPC-C takes one run per setting, so sets alternate whole and pieces. The load
# average before each set goes into bench.log.
# SYSTEMS (default serial,epic-twin) picks the systems; epic-submit runs the pieces through the
# front end (submit_pieces).
# Usage: [SYSTEMS=..] bench/batch/epic/2core-pieces.sh BUILD_DIR [OUT_DIR] [SETS (3)]
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${1:?build dir}/bench/duet_bench_epic
R=${2:-bench/results/epic/2core-pieces}
SETS=${3:-3}
SYSTEMS=${SYSTEMS:-serial,epic-twin}
. bench/batch/epic/2core-common.sh
for i in $(seq "$SETS"); do
  run "ycsb-set$i" --records 1000000 --epoch 20000 --epochs 6 --threads 2 --workloads A,F --thetas 0,0.99 \
    --split 0,1 --pieces 0,1 --systems "$SYSTEMS"
  for p in 0 1; do
    run "np-w2-pieces$p-set$i" --np 2 --threads 2 --epoch 20000 --epochs 8 --mix np --pieces $p --systems "$SYSTEMS"
  done
done
