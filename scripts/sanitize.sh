#!/usr/bin/env bash
# Builds libhvd with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan) and,
# separately, ThreadSanitizer (build-tsan), and runs the test suites in each.
#
#   scripts/sanitize.sh [asan|tsan|all]     (default: all)
#
# HVD_SANITIZE_SUITES overrides the suites run; HVD_SANITIZE_JOBS the build jobs (2).
# A report from an uninstrumented system library (MPICH, UCX, hwloc, the CUDA runtime)
# goes in tests/sanitizers/*.supp with its reason; none is needed at present. Each build prints
# how long it took, so the cost can be weighed against the CI budget.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
which=${1:-all}
suites=${HVD_SANITIZE_SUITES:-"unit mpi tools timeline tune topo abi reliability"}
jobs=${HVD_SANITIZE_JOBS:-2}
supp="$root/tests/sanitizers"

case "$which" in asan|tsan|all) ;; *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;; esac

suite_args=()
for s in $suites; do suite_args+=(--suite "$s"); done

# Python bindings would need the sanitizer runtime preloaded into the interpreter;
# they are left to the ordinary build.
run_one() {  # name sanitize-value
  local name=$1 sanitize=$2 dir="$root/build-$1" start end
  start=$(date +%s)
  if [ ! -d "$dir" ]; then
    meson setup "$dir" "$root" -Db_sanitize="$sanitize" -Db_lundef=false \
      -Dbuildtype=debugoptimized -Dpython_tests=disabled
  fi
  ninja -C "$dir" -j"$jobs"
  local built; built=$(date +%s)
  # Sanitized ranks are slower, the thread sanitizer most: longer test timeouts.
  meson test -C "$dir" --num-processes 1 --print-errorlogs --timeout-multiplier 4 \
    "${suite_args[@]}"
  end=$(date +%s)
  echo "sanitize $name: build $((built - start)) s, tests $((end - built)) s, total $((end - start)) s"
}

# hwloc's PCI plugin (libpciaccess underneath) leaks its device list and is unloaded
# at exit, so LeakSanitizer reports it from "<unknown module>", which no suppression
# can name. The topology tests read XML files; PCI discovery is not needed here.
export HWLOC_COMPONENTS=-pci

# halt_on_error makes any report fail its test.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:protect_shadow_gap=0:suppressions=$supp/asan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:print_suppressions=0"

status=0
if [ "$which" = asan ] || [ "$which" = all ]; then
  run_one asan address,undefined || status=1
fi
if [ "$which" = tsan ] || [ "$which" = all ]; then
  # MPICH's UCX netmod patches mmap/madvise and malloc (libucm) to track memory. glibc
  # madvises a thread's stack as the thread exits, after ThreadSanitizer has torn
  # down the thread's state; UCX's hook then takes a rwlock and the rank crashes
  # (SIGSEGV in __tsan::MutexPreReadLock). Our host buffers need no UCX registration
  # cache, so the hooks are switched off for this build only.
  UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no run_one tsan thread || status=1
fi
exit $status
