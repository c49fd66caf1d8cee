#!/bin/sh
# libhvd links no NCCL: it loads one at the first GPU collective (lib/ops/nccl/
# nccl_loader.h), so that a framework's own libnccl.so.2, loaded by soname, is not
# shadowed by another NCCL libhvd pulled in first. A NEEDED entry would bring that back.
set -eu
lib="$1"
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if [ -z "$needed" ]; then
  echo "readelf listed no NEEDED entries for $lib: this check cannot tell"
  exit 1
fi
if echo "$needed" | grep -q '^libnccl'; then
  echo "$lib needs NCCL at load time:"
  echo "$needed" | grep '^libnccl'
  exit 1
fi
echo "ok: no libnccl among $(echo "$needed" | wc -l) NEEDED entries:" $needed
