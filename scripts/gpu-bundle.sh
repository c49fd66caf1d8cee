#!/usr/bin/env bash
# Packs what the gpu suite, the device benchmark and Horovod's PyTorch tests need into
# one tarball, for a machine that has a GPU, CUDA and NCCL but no compiler, MPI or
# network: an MPICH build's libhvd and gpu test programs, the MPI runtime they link (MPICH
# and its UCX, hwloc, CMocka), Hydra's mpiexec, and the gpu suite's list of tests.
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [OUT.tar.xz] [HOROVOD_CHECKOUT]
#
# On the GPU machine, from a checkout of the same commit (for the Python bindings):
#   scripts/gpu_check/run.sh OUT.tar.xz RESULTS_DIR
# CUDA's runtime and NCCL are not packed: run.sh takes the GPU machine's own.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=$(realpath -m "${2:-$root/gpu-bundle.tar.xz}")
horovod=${3:-}
[ -f "$build/lib/libhvd.so.0" ] || { echo "gpu-bundle: no libhvd in $build: build first" >&2; exit 2; }
ls "$build"/tests/gpu/test_gpu_* >/dev/null 2>&1 || { echo "gpu-bundle: $build has no gpu tests (built without CUDA?)" >&2; exit 2; }
# Hydra's mpiexec travels as one program; Open MPI's launcher needs its whole tree.
if ! ldd "$build/lib/libhvd.so.0" | grep -q libmpich; then
  echo "gpu-bundle: $build is not an MPICH build; bundle one (meson setup build with MPICH)" >&2
  exit 2
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{lib/ucx,bin,build/lib,build/tests/gpu,build/tools}
find "$build/lib" -maxdepth 1 -name 'libhvd.so*' ! -type d -exec cp -P {} "$stage/build/lib/" \;
find "$build/tests/gpu" -maxdepth 1 -type f -name 'test_gpu_*' -executable -exec cp {} "$stage/build/tests/gpu/" \;
for tool in hvd-bench hvdrun; do
  mkdir -p "$stage/build/tools/$tool"
  cp "$build/tools/$tool/$tool" "$stage/build/tools/$tool/"
done
strip --strip-debug "$stage"/build/lib/libhvd.so.*.* "$stage"/build/tests/gpu/* "$stage"/build/tools/*/* 2>/dev/null || true

mpiexec=$(readlink -f "$(command -v mpiexec.hydra || command -v mpiexec)")
proxy=$(dirname "$mpiexec")/hydra_pmi_proxy
cp "$mpiexec" "$stage/bin/mpiexec"
[ -x "$proxy" ] && cp "$proxy" "$stage/bin/"

# Every shared library these programs need, except the C/C++ runtime (the GPU
# machine's own is newer) and CUDA's and NCCL's (they must match its driver).
keep() {
  case "$(basename "$1")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libresolv.so*|libutil.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) return 1 ;;
    libcudart.so*|libnccl.so*|libcuda.so*) return 1 ;;
  esac
}
for exe in "$stage"/build/lib/libhvd.so.0 "$stage"/build/tests/gpu/* "$stage"/bin/*; do
  LD_LIBRARY_PATH="$build/lib" ldd "$exe" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$lib" in "$build"/*|"$stage"/*) continue ;; esac
  if keep "$lib"; then cp -L "$lib" "$stage/lib/"; fi
done
# UCX loads its transports as modules from a folder beside libucs.
ucx_modules=$(dirname "$(ldconfig -p | awk '/libucs.so.0 / {print $NF; exit}')")/ucx
[ -d "$ucx_modules" ] && cp -L "$ucx_modules"/libuct_cma.so.0 "$stage/lib/ucx/" 2>/dev/null || true

meson introspect "$build" --tests | python3 -c '
import json, sys
tests = [t for t in json.load(sys.stdin) if "gpu" in t["suite"] or any(s.endswith(":gpu") or s == "gpu" for s in t["suite"])]
json.dump({"build": sys.argv[1], "tests": tests}, open(sys.argv[2], "w"), indent=1)
' "$build" "$stage/gpu_tests.json"

if [ -n "$horovod" ]; then
  mkdir -p "$stage/horovod/test"
  cp -r "$horovod/test/parallel" "$horovod/test/utils" "$stage/horovod/test/"
  [ -f "$horovod/test/conftest.py" ] && cp "$horovod/test/conftest.py" "$stage/horovod/test/"
fi
tar -cJf "$out" -C "$stage" .
echo "gpu-bundle: $out ($(du -h "$out" | cut -f1)); on the GPU machine: scripts/gpu_check/run.sh $(basename "$out") RESULTS_DIR"
