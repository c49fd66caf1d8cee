#!/usr/bin/env bash
# Runs Horovod's TensorFlow 2 and Keras examples from a Horovod source tree you point
# at, unchanged, under `hvdrun -np NP` on localhost against libhvd's horovod stand-in,
# and prints one line per example: passed (exit 0) or failed with its last lines.
# MNIST's download is replaced by generated data (scripts/horovod_examples/run_example.py);
# the synthetic benchmarks get a small model and batch so that they fit a CPU.
#
#   scripts/horovod-examples.sh PATH_TO_HOROVOD_CHECKOUT [NP]
#
# Environment: HVD_BUILD (build directory, default build), PYTHON (default the
# project's .venv-tf/bin/python). Exit status 0 when every example passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
examples="$1/examples/tensorflow2"
np=${2:-2}
build=$(cd "${HVD_BUILD:-$root/build}" && pwd)
python=${PYTHON:-$root/.venv-tf/bin/python}
[ -d "$examples" ] || { echo "no $examples: point at a Horovod checkout" >&2; exit 2; }
[ -x "$build/tools/hvdrun/hvdrun" ] || { echo "no hvdrun in $build: build libhvd first" >&2; exit 2; }
export HVD_LIBRARY=$build/lib/libhvd.so.0
export PYTHONPATH="$root/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
export TF_CPP_MIN_LOG_LEVEL=2
small_benchmark=(--model MobileNetV2 --batch-size 4 --num-batches-per-iter 2 --num-iters 2)
run_dir=$(mktemp -d)
trap 'rm -rf "$run_dir"' EXIT
status=0
run() {  # NAME ARGS...
  local name=$1 started=$SECONDS
  shift
  if (cd "$run_dir" && "$build/tools/hvdrun/hvdrun" -np "$np" "$python" \
        "$root/scripts/horovod_examples/run_example.py" "$examples/$name" "$@") \
        >"$run_dir/$name.log" 2>&1; then
    printf '  passed  %-45s %4d s\n' "$name" $((SECONDS - started))
  else
    printf '  failed  %-45s %4d s\n' "$name" $((SECONDS - started))
    tail -15 "$run_dir/$name.log" | sed 's/^/      /'
    status=1
  fi
}
run tensorflow2_synthetic_benchmark.py "${small_benchmark[@]}" --num-warmup-batches 1
run tensorflow2_keras_synthetic_benchmark.py "${small_benchmark[@]}"
run tensorflow2_mnist.py
run tensorflow2_keras_mnist.py
exit $status
