#!/usr/bin/env bash
# Builds libhvd and runs the test suite: the whole of it against MPICH (build/), then
# against Open MPI (build-openmpi/) the suites whose outcome can depend on the MPI
# beneath: the multi-rank programs, the network lab, hvdrun and its failure handling,
# the Python layer over each MPI, the GPU tests. What cannot differ between the two
# (unit tests, the ABI checks, topology from XML, the autotuner's model, the timeline's
# format, hvd-bench's argument handling, the Rust crate, the install layouts) runs once.
# tests/mpi/meson.build and tests/python/meson.build say which runs of a suite go
# against Open MPI too. scripts/install-deps.sh installs both MPIs.
#
# HVD_TEST_TIMEOUT_MULTIPLIER (a whole number, default 1) scales every timeout, meson's
# and those the tests set for themselves: raise it on a slow or loaded machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export HVD_TEST_TIMEOUT_MULTIPLIER=${HVD_TEST_TIMEOUT_MULTIPLIER:-1}
[[ $HVD_TEST_TIMEOUT_MULTIPLIER =~ ^[1-9][0-9]*$ ]] || {
  echo "HVD_TEST_TIMEOUT_MULTIPLIER must be a whole number of 1 or more, not '$HVD_TEST_TIMEOUT_MULTIPLIER'" >&2
  exit 2
}
status=0
# pkgconfig.relocatable is a default of meson.build's, given again so that a build
# folder made before it (reconfigured, not made anew) gets it too.
setup() {  # DIR ARGS...
  local dir=$1
  shift
  meson setup "$dir" --reconfigure -Dpkgconfig.relocatable=true "$@" >/dev/null 2>&1 ||
    meson setup "$dir" -Dpkgconfig.relocatable=true "$@"
}
run_suites() {  # DIR MESON-TEST-ARGS...
  local dir=$1
  shift
  meson test -C "$dir" --print-errorlogs --num-processes 1 \
    --timeout-multiplier "$HVD_TEST_TIMEOUT_MULTIPLIER" "$@"
}
started=$SECONDS
# -Dtests=true: the README's first command makes build/ without the suites.
setup build -Dtests=true
run_suites build || status=1
echo "MPICH: $((SECONDS - started)) s"

started=$SECONDS
setup build-openmpi -Dmpi=openmpi -Dtests=true
# meson test builds only what the chosen suites need. Suite no-mpi: tests in those
# suites that run no MPI at all (hvdrun against fake launchers).
run_suites build-openmpi --suite mpi --suite netlab --suite reliability --suite python \
  --suite tools --suite gpu --no-suite no-mpi || status=1
echo "Open MPI: $((SECONDS - started)) s"
exit $status
