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
# Two cores do the work of four things: the tests hold them only part of the time
# (ranks waiting on each other, launchers and watchdogs waiting out their bounds), so
# the compiles that no test waits for run beside them at idle priority, taking only
# what the tests leave: the Open MPI build during the MPICH pass, then install-pip
# (which builds the wheel, minutes of compiling) during the Open MPI pass. meson runs
# two tests at a time where both may share the machine; a test marked is_parallel:
# false (every MPI job, whose ranks fill the cores) runs alone.
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
  meson test -C "$dir" --print-errorlogs --num-processes 2 \
    --timeout-multiplier "$HVD_TEST_TIMEOUT_MULTIPLIER" "$@"
}
started=$SECONDS
# -Dtests=true: the README's first command makes build/ without the suites.
setup build -Dtests=true
setup build-openmpi -Dmpi=openmpi -Dtests=true
ninja -C build
echo "MPICH build: $((SECONDS - started)) s"

# At idle priority beside the tests: the Open MPI build, which the Open MPI pass waits
# for (its status comes through a FIFO, opened both ways here so that neither side
# blocks on opening it), then install-pip, whose report comes last. In a process
# group of its own, ended with this script if it ends first.
logs=build/meson-logs
rm -f "$logs/openmpi-built"
mkfifo "$logs/openmpi-built"
exec 3<>"$logs/openmpi-built"
setsid bash -c '
  logs=$1
  built=0
  nice -n 19 ninja -C build-openmpi >"$logs/openmpi-build.log" 2>&1 || built=$?
  echo "$built" >&3
  exec 3>&-
  exec nice -n 19 meson test -C build --print-errorlogs --logbase testlog-pip \
    --timeout-multiplier "$HVD_TEST_TIMEOUT_MULTIPLIER" --suite pip >"$logs/pip.log" 2>&1
' beside "$logs" &
beside=$!
trap 'kill -- -"$beside" 2>/dev/null || true' EXIT

started=$SECONDS
# (The tests get no descriptor 3: the FIFO is this script's.)
run_suites build --no-suite pip 3<&- || status=1
echo "MPICH: $((SECONDS - started)) s"

started=$SECONDS
read -r built <&3
if [[ $built != 0 ]]; then
  cat "$logs/openmpi-build.log"
  status=1
fi
# meson test builds only what the chosen suites need. Suite no-mpi: tests in those
# suites that run no MPI at all (hvdrun against fake launchers).
run_suites build-openmpi --suite mpi --suite netlab --suite reliability --suite python \
  --suite tools --suite gpu --no-suite no-mpi 3<&- || status=1
echo "Open MPI (with what was left of its build): $((SECONDS - started)) s"

started=$SECONDS
wait "$beside" || status=1
cat "$logs/pip.log"
echo "install-pip (what was left of it): $((SECONDS - started)) s"
exit $status
