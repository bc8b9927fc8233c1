# shellcheck shell=bash
# Sourced by the scripts that run benchmarks on the GPU machine.
# machine_info: prints what a result needs about the machine it ran on (cores, CPU model,
# memory, GPUs, transparent huge pages), for the scripts' machine.txt.
machine_info() {
  echo "cores: $(nproc)"
  grep -m1 'model name' /proc/cpuinfo
  free -g | head -2
  nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
}
# start_run OUT PACK: makes OUT, puts PACK's libraries first on LD_LIBRARY_PATH, writes
# OUT/machine.txt and starts OUT/log.txt with it; sets LOG to the log's path.
start_run() {
  mkdir -p "$1"
  export LD_LIBRARY_PATH=$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  LOG=$1/log.txt
  machine_info > "$1/machine.txt"
  tee -a "$LOG" < "$1/machine.txt"
}
# perf_flat FREQ SORT REPORT CMD...: runs CMD under perf-pack/perf's `perf record` at FREQ samples
# per second and writes its flat profile (no children, sorted by SORT, lines of 0.4% and more) to
# REPORT; CMD's output goes to stdout. The recording is deleted afterwards.
perf_flat() {
  local freq=$1 sort=$2 report=$3
  shift 3
  LD_LIBRARY_PATH=perf-pack:${LD_LIBRARY_PATH:-} timeout 200 perf-pack/perf record -F "$freq" -o "$report.data" -- "$@" 2>&1
  LD_LIBRARY_PATH=perf-pack timeout 120 perf-pack/perf report -i "$report.data" --no-children --sort "$sort" \
    --stdio --percent-limit 0.4 2>/dev/null | grep -v '^$' | head -80 > "$report"
  rm -f "$report.data"
}
