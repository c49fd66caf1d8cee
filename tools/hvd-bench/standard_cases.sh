#!/bin/sh
# Runs the standard cases of docs/performance.md on 2 ranks, in one go:
# resnet50, bert_base, many-small, latency (all with --baseline) and idle.
#   tools/hvd-bench/standard_cases.sh [path/to/hvd-bench] [extra hvd-bench flags, e.g. --json]
# MPIEXEC and NP may be set in the environment (default: mpiexec, 2).
set -eu
bench=${1:-build/tools/hvd-bench/hvd-bench}
[ $# -gt 0 ] && shift
mpiexec=${MPIEXEC:-mpiexec}
np=${NP:-2}

run() {
  echo "\$ $mpiexec -n $np hvd-bench $*"
  "$mpiexec" -n "$np" "$bench" "$@"
  echo
}

run --workload resnet50 --baseline -n 20 -w 3 "$@"
run --workload bert_base --baseline -n 10 -w 2 "$@"
run --tensors 1000 --count 1024 --baseline -n 50 -w 5 "$@"
run --tensors 1 --count 1024 --baseline -n 200 -w 10 "$@"
run --idle 10 "$@"
