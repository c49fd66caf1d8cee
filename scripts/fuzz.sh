#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz and runs each on its seed
# corpus for SECONDS seconds (default 60).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      targets: fuzz_params fuzz_wire fuzz_hvdrun
#
# New inputs go to build-fuzz/corpus/<target> (the checked-in seeds stay as they
# are); a crash leaves crash-* in build-fuzz/artifacts and fails the script. Turn a
# crash into a regression test by adding the input to fuzz/regressions/<name>/ (the
# target's name without fuzz_): the reliability suite replays those with any compiler.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_params fuzz_wire fuzz_hvdrun)
dir="$root/build-fuzz"

if [ ! -d "$dir" ]; then
  # Coverage instrumentation on every object, so the fuzzer sees inside the library.
  CC=clang CXX=clang++ meson setup "$dir" "$root" -Dfuzzing=true -Dtests=false \
    -Dcuda=disabled -Dpython_tests=disabled -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args=-fsanitize=fuzzer-no-link -Dcpp_args=-fsanitize=fuzzer-no-link
fi
ninja -C "$dir" -j"${HVD_FUZZ_JOBS:-2}" $(printf 'fuzz/%s ' "${targets[@]}")

mkdir -p "$dir/artifacts"
status=0
for t in "${targets[@]}"; do
  short=${t#fuzz_}
  corpus="$dir/corpus/$t"
  mkdir -p "$corpus"
  echo "== $t: ${seconds}s"
  # Known crashes first: they must not crash any more.
  "$dir/fuzz/$t" -runs=0 "$root/fuzz/regressions/$short" 2>/dev/null || {
    status=1; echo "$t: a regression input crashes again"; }
  "$dir/fuzz/$t" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/$t-" "$corpus" "$root/fuzz/corpus/$short" \
    2>"$dir/$t.log" || { status=1; echo "$t: crash, see $dir/$t.log"; }
  grep -E 'stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb' "$dir/$t.log" || true
done
exit $status
