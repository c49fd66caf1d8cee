#!/bin/sh
# Autotune against a grid search, in one run, on one hvd-bench case:
#  1. every grid point (fusion threshold x cycle time x response cache on/off) measured
#     with the knobs fixed;
#  2. a run with HOROVOD_AUTOTUNE=1 that starts from a poor setting (1 MiB, 10 ms),
#     long enough for the tuner to finish; its log's last row is the chosen point;
#  3. the chosen point and the best grid point measured again, alternately, REPEAT
#     times each, so that both see the same machine.
# Prints the grid, the tuner's choice, the steps it took and the ratio of the two.
#
#   tools/hvd-bench/autotune_vs_grid.sh [hvd-bench] CASE-FLAGS...
#   e.g. tools/hvd-bench/autotune_vs_grid.sh build/tools/hvd-bench/hvd-bench --workload resnet50
#
# MPIEXEC (MPICH's Hydra: -genv), NP (2), ITERS (measured steps per point, 10), REPEAT
# (3), THRESHOLDS, CYCLES and CACHES (the grid; cache capacities, 0 = off) may be set
# in the environment.
set -eu
bench=${1:-build/tools/hvd-bench/hvd-bench}
[ $# -gt 0 ] && shift
mpiexec=${MPIEXEC:-mpiexec}
np=${NP:-2}
iters=${ITERS:-10}
repeat=${REPEAT:-3}
thresholds=${THRESHOLDS:-"1M 4M 16M 64M 128M 256M"}
cycles=${CYCLES:-"1 5 10"}
caches=${CACHES:-"1024 0"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Median step time (ms) of one fixed point.
measure() {  # threshold cycle cache-capacity
  "$mpiexec" -n "$np" -genv HOROVOD_CACHE_CAPACITY "$3" \
    "$bench" --fusion-threshold "$1" --cycle-time "$2" -n "$iters" -w 2 \
    --json $case_flags 2>/dev/null |
    sed -n 's/.*"hvd_ms": {"median": \([0-9.e+-]*\).*/\1/p' | tail -1
}
case_flags="$*"

echo "case: $case_flags ($np ranks, $iters steps per point)"
echo "grid (median step, ms):"
best_ms="" best_t="" best_c="" best_k=""
for k in $caches; do
  for t in $thresholds; do
    line="  cache $k, threshold $t:"
    for c in $cycles; do
      ms=$(measure "$t" "$c" "$k")
      line="$line  cycle $c ms: $ms"
      if [ -z "$best_ms" ] || awk "BEGIN{exit !($ms < $best_ms)}"; then
        best_ms=$ms best_t=$t best_c=$c best_k=$k
      fi
    done
    echo "$line"
  done
done
echo "best grid point: cache $best_k, threshold $best_t, cycle $best_c ms ($best_ms ms)"

log="$work/autotune.csv"
steps_per_sample=${HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE:-10}
# Warm-up and samples, three windows each, and some slack.
tune_steps=$(( (3 + 20) * 3 * steps_per_sample + 50 ))
start=$(date +%s)
"$mpiexec" -n "$np" -genv HOROVOD_AUTOTUNE 1 -genv HOROVOD_AUTOTUNE_LOG "$log" \
  -genv HVD_AUTOTUNE_START_FUSION_THRESHOLD 1M -genv HVD_AUTOTUNE_START_CYCLE_TIME 10 \
  "$bench" $case_flags -n "$tune_steps" -w 0 --json >/dev/null 2>&1
end=$(date +%s)
rows=$(($(wc -l <"$log") - 1))
chosen=$(tail -1 "$log")
# Horovod's columns: hierarchical_allreduce,hierarchical_allgather,torus_allreduce,
# cache_enabled,cycle_time_ms,tensor_fusion_threshold,score
tuned_cache=$(echo "$chosen" | cut -d, -f4)
tuned_k=1024
[ "$tuned_cache" = 1 ] || tuned_k=0
tuned_c=$(echo "$chosen" | cut -d, -f5)
tuned_mib=$(echo "$chosen" | cut -d, -f6)  # MiB, as Horovod writes it
tuned_t=$(awk "BEGIN{printf \"%d\", $tuned_mib * 1048576}")
echo "autotune from 1 MiB / 10 ms: $rows log rows in $((end - start)) s of a $tune_steps-step run;"
echo "  chosen: cache $tuned_cache, threshold $tuned_mib MiB, cycle $tuned_c ms (last row: $chosen)"
first=$(sed -n 2p "$log")
echo "  first sample: $first"

tuned_all="" best_all=""
i=0
while [ $i -lt "$repeat" ]; do
  tuned_all="$tuned_all $(measure "$tuned_t" "$tuned_c" "$tuned_k")"
  best_all="$best_all $(measure "$best_t" "$best_c" "$best_k")"
  i=$((i + 1))
done
med() { echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
tuned_ms=$(med $tuned_all)
best_again=$(med $best_all)
echo "alternated, $repeat each (median step, ms): tuned$tuned_all -> $tuned_ms; best grid$best_all -> $best_again"
echo "tuned / best grid throughput: $(awk "BEGIN{printf \"%.3f\", $best_again / $tuned_ms}")"
