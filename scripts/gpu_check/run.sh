#!/usr/bin/env bash
# On a machine with a GPU: unpacks a gpu-bundle (scripts/gpu-bundle.sh) and runs the
# gpu suite, the device benchmark (tools/hvd-bench/device_bench.py) and, when the
# bundle holds Horovod's tests, Horovod's PyTorch tests on one rank, writing logs into
# RESULTS_DIR. Needs python3 with torch (CUDA) and pytest, CUDA's runtime and NCCL.
#
#   scripts/gpu_check/run.sh BUNDLE.tar.xz RESULTS_DIR
# Environment: GPU_SUITE_SECONDS (600), CONFORMANCE_SECONDS (300), BENCH=0 to skip it.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -eq 2 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
results=$(realpath -m "$2")
mkdir -p "$results"
bundle=$(mktemp -d /tmp/hvd-gpu-check.XXXXXX)
trap 'rm -rf "$bundle"' EXIT
tar -xJf "$1" -C "$bundle" || exit 2
started=$(date +%s)
elapsed() { echo "$(( $(date +%s) - started )) s"; }

# CUDA's runtime and NCCL of this machine: the toolkit's, or those pip installed.
find_lib() {
  find /usr/local/cuda*/ /opt /usr/lib /usr/local/lib \( -type f -o -type l \) -name "$1" \
    2>/dev/null | grep -v '/\.debug/' | head -1
}
nccl=$(find_lib libnccl.so.2)
cudart=$(find_lib 'libcudart.so.1[0-9]')
export LD_LIBRARY_PATH="$bundle/lib:${nccl:+$(dirname "$nccl"):}${cudart:+$(dirname "$cudart"):}${LD_LIBRARY_PATH:-}"
export PATH="$bundle/bin:$PATH" HYDRA_LAUNCHER=fork
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  echo "cpus: $(nproc); nccl: ${nccl:-not found}; cudart: ${cudart:-not found}"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  ldd "$bundle/build/lib/libhvd.so.0" | grep 'not found'
} | tee "$results/machine.txt"

echo "== gpu suite ($(elapsed))"
python3 "$root/scripts/gpu_check/run_suite.py" "$bundle" "$results/gpu_suite.log" \
  "${GPU_SUITE_SECONDS:-600}"
suite=$?

export HVD_LIBRARY="$bundle/build/lib/libhvd.so.0" PYTHONPATH="$root/bindings/python"
if [ "${BENCH:-1}" != 0 ]; then
  echo "== device benchmark, one rank ($(elapsed))"
  for workload in resnet50 bert_base; do
    timeout 120 mpiexec -n 1 python3 "$root/tools/hvd-bench/device_bench.py" \
      --workload "$workload" --json "$results/device_bench_$workload.json" \
      > "$results/device_bench_$workload.log" 2>&1 || echo "device_bench $workload failed: see its log"
  done
  cat "$results"/device_bench_*.json 2>/dev/null
fi

if [ -d "$bundle/horovod/test/parallel" ]; then
  echo "== Horovod's PyTorch tests, one rank ($(elapsed))"
  PYTHON=python3 HVD_BUILD="$bundle/build" MPIEXEC="$bundle/bin/mpiexec" \
    HVD_CONFORMANCE_TEST_TIMEOUT=30 timeout "${CONFORMANCE_SECONDS:-300}" \
    "$root/scripts/horovod-conformance.sh" "$bundle/horovod" 1 --details \
    > "$results/conformance_np1.log" 2>&1
  grep -E '^  (failed|hung|crashed) |^total' "$results/conformance_np1.log"
fi
echo "== done ($(elapsed))"
exit $suite
