#!/bin/sh
# Lists the includes under lib/ that run back up a folder order, one a line
# ("lib/FILE:LINE: FROM -> TO"), and their count last. The order is the folders of
# lib/ named as arguments, top first (as tests/abi/check_layering.sh gives them): an
# include from a folder to one named before it runs back up. Folders not named are
# not counted. Exit status 1 when any runs back up.
#   scripts/upward_includes.sh [--src DIR] api runtime observe execute negotiate adapt queue params
set -eu
src=$(dirname "$0")/..
if [ "${1:-}" = "--src" ]; then src="$2"; shift 2; fi
lib="$src/lib"
[ "$#" -gt 0 ] || { echo "usage: $0 [--src DIR] FOLDER... (top first)" >&2; exit 2; }

count=0
rank=0
for from in "$@"; do
  rank=$((rank + 1))
  above=$(echo "$@" | tr ' ' '\n' | head -n $((rank - 1)) | paste -sd'|' -)
  [ -n "$above" ] || continue
  found=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]($above)/" "$lib/$from" \
            --include='*.h' --include='*.cpp' --include='*.cu' 2>/dev/null |
          sed -E "s#^$lib/##; s#^([^:]*:[0-9]+):.*[\"<]($above)/.*#\\1: $from -> \\2#" || true)
  if [ -n "$found" ]; then
    echo "$found"
    count=$((count + $(echo "$found" | wc -l)))
  fi
done
echo "$count upward includes"
[ "$count" -eq 0 ]
