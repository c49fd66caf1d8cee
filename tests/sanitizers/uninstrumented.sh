#!/bin/sh
# Runs a program that is not instrumented but loads the instrumented libhvd (the
# interpreter, a user's program built without the sanitizer): in a sanitized build,
# with the sanitizer's runtime and the C++ runtime that HVD_SANITIZER_PRELOAD names
# (tests/sanitizers/meson.build) preloaded into it, and only into it; otherwise as is.
#   uninstrumented.sh PROGRAM ARGS...
if [ -n "${HVD_SANITIZER_PRELOAD:-}" ]; then
  LD_PRELOAD="$HVD_SANITIZER_PRELOAD${LD_PRELOAD:+ $LD_PRELOAD}"
  export LD_PRELOAD
fi
exec "$@"
