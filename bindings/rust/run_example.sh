#!/bin/sh
# Builds the crate's allreduce example with cargo (offline: the crate has no
# dependencies) against the libhvd of this build tree, then runs it under mpiexec.
# Usage: run_example.sh CARGO CRATE_DIR TARGET_DIR LIBHVD_DIR MPIEXEC NP
set -eu
cargo=$1 crate=$2 target=$3 libdir=$4 mpiexec=$5 np=$6
HVD_LIB_DIR=$libdir "$cargo" build --quiet --offline --release --example allreduce \
  --manifest-path "$crate/Cargo.toml" --target-dir "$target"
# A sanitized libhvd (tests/sanitizers/meson.build): the example is not instrumented,
# so the sanitizer runtime is preloaded into it, and only into it.
uninstrumented=$(cd "$(dirname "$0")/../../tests/sanitizers" && pwd)/uninstrumented.sh
exec "$mpiexec" -n "$np" "$uninstrumented" "$target/release/examples/allreduce"
