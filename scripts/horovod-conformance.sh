#!/usr/bin/env bash
# Runs Horovod's own tests of a Horovod source tree you point at against libhvd's
# horovod stand-in, on NP ranks, and prints a pass/fail/skip table: torch (the
# default) runs test/parallel/test_torch.py, test_timeline.py and test_adasum_pytorch.py,
# tensorflow runs test_tensorflow.py and the process set tests test_tensorflow_process_sets*.py.
# A test that hangs is reported as such after HVD_CONFORMANCE_TEST_TIMEOUT seconds
# (default 60) and the run goes on.
#
#   scripts/horovod-conformance.sh PATH_TO_HOROVOD_CHECKOUT [NP] [torch|tensorflow] [--details] [-k EXPR]
#
# The project holds none of Horovod's files. A checkout of Horovod's tests:
#   git clone --depth 1 https://github.com/horovod/horovod /tmp/horovod
# Environment: HVD_BUILD (build directory, default build), MPIEXEC (mpiexec), PYTHON
# (the project's .venv/bin/python for torch, .venv-tf/bin/python for tensorflow).
# Exit status 0 when nothing failed or hung.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
checkout=$1
shift
build=${HVD_BUILD:-$root/build}
lib="$build/lib/libhvd.so.0"
[ -f "$lib" ] || { echo "no $lib: build libhvd first (meson setup build && ninja -C build)" >&2; exit 2; }
lib="$(cd "$build" && pwd)/lib/libhvd.so.0"  # the tests run in the checkout's directory
venv=.venv
for arg in "$@"; do
  [ "$arg" = tensorflow ] && venv=.venv-tf
done
python=${PYTHON:-$root/$venv/bin/python}
export HVD_LIBRARY=$lib
export PYTHONPATH="$root/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" "$root/scripts/horovod_conformance/driver.py" "$checkout" "$@" \
  --mpiexec "${MPIEXEC:-mpiexec}" --python "$python" \
  --test-timeout "${HVD_CONFORMANCE_TEST_TIMEOUT:-60}"
