#!/usr/bin/env bash
# Builds libhvd and runs the whole test suite twice: against MPICH (build/) and against
# Open MPI (build-openmpi/). scripts/install-deps.sh installs both. The pip-install
# test rebuilds the library through meson-python, so it runs once, in the MPICH pass.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
# pkgconfig.relocatable is a default of meson.build's, given again so that a build
# folder made before it (reconfigured, not made anew) gets it too.
setup() {  # DIR ARGS...
  local dir=$1
  shift
  meson setup "$dir" --reconfigure -Dpkgconfig.relocatable=true "$@" >/dev/null 2>&1 ||
    meson setup "$dir" -Dpkgconfig.relocatable=true "$@"
}
setup build
meson test -C build --print-errorlogs --num-processes 1 || status=1
setup build-openmpi -Dmpi=openmpi
meson test -C build-openmpi --print-errorlogs --num-processes 1 --no-suite pip || status=1
exit $status
