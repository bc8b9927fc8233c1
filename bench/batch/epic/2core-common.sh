# Sourced by the 2-core Epic scripts (2core-queues.sh, 2core-pieces.sh) after they set B (the
# duet_bench_epic binary) and R (the results folder): makes R, starts R/bench.log, and defines
# load NAME (the load average into the log) and run NAME ARGS.. (one benchmark run into
# R/NAME.json, its table rows into the log).
mkdir -p "$R"
log="$R/bench.log"
: > "$log"
load() { echo "== $1 $(date -u +%H:%M:%S) load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"; }
run() {  # name, then duet_bench_epic's arguments
  local name=$1
  shift
  load "$name"
  "$B" "$@" --out "$R/$name.json" 2>&1 | grep -E "^(np|full|A|B|C|F) " | tee -a "$log"
}
