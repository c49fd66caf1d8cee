#!/bin/sh
# Builds one of the crate's examples with cargo (offline: the crate has no
# dependencies) against the libhvd of this build tree, then runs it under mpiexec.
# Every example checks its results on every rank and exits non-zero on a mismatch.
# Usage: run_example.sh CARGO CRATE_DIR TARGET_DIR LIBHVD_DIR MPIEXEC NP [EXAMPLE]
# (EXAMPLE defaults to allreduce).
set -eu
cargo=$1 crate=$2 target=$3 libdir=$4 mpiexec=$5 np=$6 example=${7:-allreduce}
HVD_LIB_DIR=$libdir "$cargo" build --quiet --offline --release --example "$example" \
  --manifest-path "$crate/Cargo.toml" --target-dir "$target"
# A sanitized libhvd (tests/sanitizers/meson.build): the example is not instrumented,
# so the sanitizer runtime is preloaded into it, and only into it.
uninstrumented=$(cd "$(dirname "$0")/../../tests/sanitizers" && pwd)/uninstrumented.sh
exec "$mpiexec" -n "$np" "$uninstrumented" "$target/release/examples/$example"
