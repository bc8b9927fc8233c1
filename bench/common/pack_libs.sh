# shellcheck shell=bash
# Sourced by the scripts that pack binaries for the GPU machine.
# pack_libs DIR BIN...: copies into DIR every shared library BIN... load that the GPU machine may
# lack (all but the C and C++ runtimes and cuBLAS, which it has), then strips their debug info.
pack_libs() {
  local dir=$1 b
  shift
  for b in "$@"; do
    ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)[.-]|libcublas' || true
  done | sort -u | while read -r lib; do cp -L "$lib" "$dir"/; done
  strip --strip-debug "$dir"/* 2>/dev/null || true
}
