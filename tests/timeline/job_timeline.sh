#!/bin/sh
# A real job with HOROVOD_TIMELINE: rank 0's file must be a valid timeline holding
# negotiation and allreduce phases with their MPI activity, and cycle marks.
# Arguments: mpiexec, python, checker, program.
set -eu
mpiexec="$1" python="$2" checker="$3" program="$4"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
HOROVOD_TIMELINE="$dir/timeline.json" HOROVOD_TIMELINE_MARK_CYCLES=1 \
  "$mpiexec" -n 2 "$program" > "$dir/out.txt"
events=$("$python" "$checker" "$dir/timeline.json")
for want in NEGOTIATE_ALLREDUCE ALLREDUCE MPI_ALLREDUCE CYCLE_START; do
  echo "$events" | grep -q "$want" || { echo "timeline lacks $want"; echo "$events" | head -20; exit 1; }
done
echo "ok: $(echo "$events" | wc -l) events"
