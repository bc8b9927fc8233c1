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
