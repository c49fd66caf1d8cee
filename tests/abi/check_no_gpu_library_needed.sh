#!/bin/sh
# libhvd links no NCCL: it loads one at the first GPU collective (lib/ops/nccl/
# nccl_loader.h), so that a framework's own libnccl.so.2, loaded by soname, is not
# shadowed by another NCCL libhvd pulled in first. A NEEDED entry would bring that back.
# With CUDA's static runtime found at build time (second argument "static"), no shared
# libcudart either (meson.build says why).
#   check_no_gpu_library_needed.sh LIBHVD static|shared|none
set -eu
lib="$1"
cudart="${2:-none}"
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if [ -z "$needed" ]; then
  echo "readelf listed no NEEDED entries for $lib: this check cannot tell"
  exit 1
fi
refused='^libnccl'
names=libnccl
if [ "$cudart" = static ]; then
  refused='^libnccl\|^libcudart'
  names="libnccl, libcudart"
fi
if echo "$needed" | grep -q "$refused"; then
  echo "$lib needs at load time what it must not (CUDA runtime linked: $cudart):"
  echo "$needed" | grep "$refused"
  exit 1
fi
echo "ok: no $names among $(echo "$needed" | wc -l) NEEDED entries:" $needed
