#!/bin/sh
# Writes the knob table of docs/configuration.md from `hvd-info --markdown`, which reads
# the registry the library reads its environment through (lib/params/params.cpp), so the
# page cannot drift from the library. With --check, changes nothing and fails, showing
# the difference, where the page and the program disagree.
# Usage: configuration_doc.sh [--check] HVD_INFO [DOC] [MPI_FLAVOR]
#   e.g. scripts/configuration_doc.sh build/tools/hvd-info/hvd-info
# The page holds an MPICH build's defaults (HVD_ALLREDUCE_CHUNK_BYTES's differs with
# Open MPI): --check of another build is skipped (status 77).
set -u
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
info=${1:?usage: configuration_doc.sh [--check] HVD_INFO [DOC] [MPI_FLAVOR]}
doc=${2:-$(cd "$(dirname "$0")/.." && pwd)/docs/configuration.md}
flavor=${3:-mpich}
begin='<!-- knobs: written by scripts/configuration_doc.sh from hvd-info --markdown; edit lib/params/params.cpp, not this table -->'
end='<!-- end of knobs -->'

if [ "$check" = 1 ] && [ "$flavor" != mpich ]; then
  echo "skipped: docs/configuration.md holds an MPICH build's defaults; this build uses $flavor"
  exit 77
fi
grep -qxF -- "$begin" "$doc" && grep -qxF -- "$end" "$doc" ||
  { echo "configuration_doc.sh: $doc lacks the lines marking the knob table" >&2; exit 1; }
table=$(mktemp) new=$(mktemp)
trap 'rm -f "$table" "$new"' EXIT
"$info" --markdown >"$table" || { echo "configuration_doc.sh: $info --markdown failed" >&2; exit 1; }
awk -v begin="$begin" -v end="$end" -v table="$table" '
  $0 == begin { print; while ((getline line < table) > 0) print line; skip = 1; next }
  $0 == end { skip = 0 }
  !skip { print }' "$doc" >"$new"
if [ "$check" = 1 ]; then
  if ! cmp -s "$doc" "$new"; then
    echo "docs/configuration.md's knob table differs from hvd-info --markdown;" \
      "run scripts/configuration_doc.sh $info" >&2
    diff "$doc" "$new" >&2
    exit 1
  fi
  echo "ok: the knob table matches hvd-info --markdown"
  exit 0
fi
cat "$new" >"$doc"
