#!/bin/sh
# Runs the standard cases of docs/performance.md in one go.
#   tools/hvd-bench/standard_cases.sh [path/to/hvd-bench] [extra hvd-bench flags, e.g. --json]
#       over shared memory, 2 ranks: resnet50, bert_base, many-small, latency (all
#       with --baseline) and idle. MPIEXEC and NP may be set (default: mpiexec, 2).
#   tools/hvd-bench/standard_cases.sh --lab [path/to/hvd-bench] [extra flags]
#       on the network lab (scripts/netlab.sh, needs root), each layout on a lab of its
#       own: 2 nodes x 1 rank with the link unlimited (the four cases, and many-small
#       laid out as bucket views and handed over a bucket at a time, --bucket-mb 25,
#       as DistributedOptimizer(gradient_as_bucket_view=True) does; left out with
#       --grouped) and at 1 Gbit/s (resnet50, many-small, latency), then 2 nodes x 2
#       ranks at 1 Gbit/s: resnet50 flat and hierarchical
#       (HOROVOD_HIERARCHICAL_ALLREDUCE=0/1), alternating twice.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
netlab=$here/../../scripts/netlab.sh

lab=
if [ "${1:-}" = --lab ]; then lab=1; shift; fi
# Inside a lab (re-entered through netlab.sh run): --in-lab SLOTS LABEL
if [ "${1:-}" = --in-lab ]; then lab=in; slots=$2 label=$3; shift 3; fi
bench=${1:-build/tools/hvd-bench/hvd-bench}
[ $# -gt 0 ] && shift

if [ "$lab" = 1 ]; then
  "$netlab" run -n 2 -- "$0" --in-lab 1 "2 nodes x 1 rank, link unlimited" "$bench" "$@"
  "$netlab" run -n 2 -r 1gbit -- "$0" --in-lab 1 "2 nodes x 1 rank, 1 Gbit/s" "$bench" "$@"
  "$netlab" run -n 2 -r 1gbit -- "$0" --in-lab 2 "2 nodes x 2 ranks, 1 Gbit/s" "$bench" "$@"
  exit 0
fi

run() {
  if [ "$lab" = in ]; then
    np=$((slots * 2))
    echo "\$ [lab: $label] ${HOROVOD_HIERARCHICAL_ALLREDUCE:+HOROVOD_HIERARCHICAL_ALLREDUCE=$HOROVOD_HIERARCHICAL_ALLREDUCE }netlab.sh mpiexec LAB $slots -n $np hvd-bench $*"
    "$netlab" mpiexec "$NETLAB_DIR" "$slots" -n "$np" "$bench" "$@"
  else
    echo "\$ ${MPIEXEC:-mpiexec} -n ${NP:-2} hvd-bench $*"
    "${MPIEXEC:-mpiexec}" -n "${NP:-2}" "$bench" "$@"
  fi
  echo
}

resnet50() { run --workload resnet50 --baseline -n 20 -w 3 "$@"; }
bert_base() { run --workload bert_base --baseline -n 10 -w 2 "$@"; }
many_small() { run --tensors 1000 --count 1024 --baseline -n 50 -w 5 "$@"; }
latency() { run --tensors 1 --count 1024 --baseline -n 200 -w 10 "$@"; }
# The bucket case hands a step over a bucket at a time; --grouped hands it over as one
# call, and hvd-bench takes one or the other: with --grouped among the extra flags the
# case is left out, and said so.
bucketed() {
  for flag in "$@"; do
    if [ "$flag" = --grouped ]; then
      echo "(many-small a bucket at a time left out: --grouped hands the step over as one call)"
      echo
      return 0
    fi
  done
  many_small --bucket-mb 25 "$@"
}

case "$lab:${slots:-}:${label:-}" in
  in:1:*unlimited*)
    resnet50 "$@"; bert_base "$@"; many_small "$@"; bucketed "$@"
    latency "$@" ;;
  in:1:*)
    run --workload resnet50 --baseline -n 10 -w 2 "$@"; many_small "$@"; latency "$@" ;;
  in:2:*)
    for round in 1 2; do
      for h in 0 1; do
        HOROVOD_HIERARCHICAL_ALLREDUCE=$h run --workload resnet50 --baseline -n 8 -w 2 "$@"
      done
    done ;;
  *)
    resnet50 "$@"; bert_base "$@"; many_small "$@"; latency "$@"; run --idle 10 "$@" ;;
esac
