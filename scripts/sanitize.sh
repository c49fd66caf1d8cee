#!/usr/bin/env bash
# Builds libhvd with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan) and,
# separately, ThreadSanitizer (build-tsan), and runs the whole test suite in each,
# the Python suites included (the sanitizer runtime preloaded into the interpreter).
#
#   scripts/sanitize.sh [asan|tsan|all]               (default: all)
#   scripts/sanitize.sh asan|tsan -- TEST...          re-runs the named tests only
#
# HVD_SANITIZE_SUITES limits the run to some suites (default: every suite);
# HVD_SANITIZE_JOBS sets the build jobs (2). The run-time options (ASAN_OPTIONS,
# TSAN_OPTIONS, the suppression files in tests/sanitizers, the Python preload) are
# the build's default test setup, defined in tests/sanitizers/meson.build, so
# `meson test -C build-asan NAME` runs a test the same way. Each build prints how long
# it took, so the cost can be weighed against the CI budget.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
which=${1:-all}
[ $# -gt 0 ] && shift
tests=()
if [ $# -gt 0 ]; then
  if [ "$1" != -- ] || [ "$which" = all ]; then
    echo "usage: $0 [asan|tsan|all]  |  $0 asan|tsan -- TEST..." >&2
    exit 2
  fi
  shift
  tests=("$@")
fi
jobs=${HVD_SANITIZE_JOBS:-2}

case "$which" in asan|tsan|all) ;; *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;; esac

select_args=()
if [ ${#tests[@]} -gt 0 ]; then
  select_args=("${tests[@]}")
else
  for s in ${HVD_SANITIZE_SUITES:-}; do select_args+=(--suite "$s"); done
fi

python_tests_of() {  # build-dir: the value of its python_tests option
  meson introspect --buildoptions "$1" | /usr/bin/python3 -c \
    'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "python_tests"))'
}

run_one() {  # name sanitize-value
  local name=$1 sanitize=$2 dir="$root/build-$1" start end
  start=$(date +%s)
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$root" -Db_sanitize="$sanitize" -Db_lundef=false \
      -Dbuildtype=debugoptimized
  elif [ "$(python_tests_of "$dir")" = disabled ]; then
    # A build directory configured by an earlier version of this script.
    meson configure "$dir" -Dpython_tests=auto
  fi
  ninja -C "$dir" -j"$jobs" || return
  local built; built=$(date +%s)
  # Called as "run_one ... || status=1", where set -e does not apply: the status of
  # the tests is returned explicitly.
  local result=0
  meson test -C "$dir" --setup sanitized --num-processes 1 --print-errorlogs \
    "${select_args[@]}" || result=$?
  end=$(date +%s)
  echo "sanitize $name: build $((built - start)) s, tests $((end - built)) s, total $((end - start)) s, meson test status $result"
  return $result
}

status=0
if [ "$which" = asan ] || [ "$which" = all ]; then
  run_one asan address,undefined || status=1
fi
if [ "$which" = tsan ] || [ "$which" = all ]; then
  run_one tsan thread || status=1
fi
exit $status
