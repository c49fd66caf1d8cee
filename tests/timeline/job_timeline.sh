#!/bin/sh
# A real job with HOROVOD_TIMELINE: rank 0's file must be a valid timeline that
# meets the expectations file: a line "+TEXT" must appear in the checker's event
# lines ("<ph> <row> <name> [args]"), a line "-TEXT" nowhere in the file.
# Arguments: mpiexec, python, checker, program, expectations.
set -eu
mpiexec="$1" python="$2" checker="$3" program="$4" expectations="$5"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
HOROVOD_TIMELINE="$dir/timeline.json" HOROVOD_TIMELINE_MARK_CYCLES=1 \
  "$mpiexec" -n 2 "$program" > "$dir/out.txt"
events=$("$python" "$checker" "$dir/timeline.json")
status=0
while IFS= read -r line; do
  text=${line#?}
  case "$line" in
    +*) echo "$events" | grep -qF -- "$text" || { echo "timeline lacks: $text"; status=1; } ;;
    -*) if grep -qF -- "$text" "$dir/timeline.json"; then echo "timeline holds: $text"; status=1; fi ;;
  esac
done < "$expectations"
if [ "$status" -ne 0 ]; then echo "$events" | head -60; exit 1; fi
echo "ok: $(echo "$events" | wc -l) events"
