#!/bin/sh
# The layering of lib/ is one-way (DESIGN.md, Layout): api on top; then the folders a
# tensor travels through, each including only the folders after it,
#   runtime -> observe -> execute -> negotiate -> adapt -> queue -> params
# (each folder's README.md says what it owns and may call); then fusion, ops, topo,
# tune and timeline, which include none of those; base below everything.
#   base                          includes nothing from lib/ outside itself
#   fusion ops topo tune timeline include nothing from the folders above
#   ops                           includes nothing from fusion/
# and, from the same paragraph of DESIGN.md: nothing outside ops/nccl includes
# nccl.h, nothing outside params/params* calls getenv.
# scripts/upward_includes.sh lists the includes that run back up an order. The
# folders of the tensor's path hold no source file over 600 lines, none over 3,000.
set -eu
src="$1"
lib="$src/lib"
status=0

# forbid LAYER FOLDERS: fails on any include under lib/LAYER that names one of
# FOLDERS (an extended regular expression of folder names).
forbid() {
  if [ -z "$(find "$lib/$1" -type f \( -name '*.h' -o -name '*.cpp' \) 2>/dev/null | head -n 1)" ]; then
    echo "no sources under lib/$1: this check is out of date"
    status=1
    return
  fi
  found=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]($2)/" "$lib/$1" \
            --include='*.h' --include='*.cpp' --include='*.cu' | sed "s|^$lib/|lib/|" || true)
  if [ -n "$found" ]; then
    echo "lib/$1 must not include $2 headers:"
    echo "$found"
    status=1
  fi
}

# The folders a tensor travels through, top first.
tensor_path="runtime observe execute negotiate adapt queue params"
above=api
for layer in $tensor_path; do
  forbid "$layer" "$above"
  above="$above|$layer"
done
forbid base "$above|fusion|ops|topo|tune|timeline"
for layer in fusion ops topo tune timeline; do forbid "$layer" "$above"; done
forbid ops 'fusion'

# only_in PLACE PATTERN WHAT: fails on lines of lib/ matching PATTERN outside lib/PLACE*.
only_in() {
  found=$(grep -rnE "$2" "$lib" | grep -v "^$lib/$1" | sed "s|^$lib/|lib/|" || true)
  if [ -n "$found" ]; then
    echo "only lib/$1* may $3:"
    echo "$found"
    status=1
  fi
}

only_in ops/nccl/ '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]nccl\.h[>"]' 'include nccl.h'
only_in params/params '(^|[^_[:alnum:]])(secure_)?getenv[[:space:]]*\(' 'read the environment'

# The tensor's path stays readable in parts: no source file over 600 lines, no folder
# over 3,000 (split a file by responsibility, a folder by a step of the path).
for layer in $tensor_path; do
  big=$(find "$lib/$layer" -type f \( -name '*.h' -o -name '*.cpp' \) -exec wc -l {} + |
        awk '$2 != "total" && $1 > 600 { print "  " $2 ": " $1 " lines" }' | sed "s|$lib/|lib/|")
  if [ -n "$big" ]; then
    echo "lib/$layer has source files over 600 lines:"
    echo "$big"
    status=1
  fi
  lines=$(find "$lib/$layer" -type f \( -name '*.h' -o -name '*.cpp' \) -exec cat {} + | wc -l)
  if [ "$lines" -gt 3000 ]; then
    echo "lib/$layer holds $lines lines of source, over 3000"
    status=1
  fi
done

[ "$status" -eq 0 ] && echo "ok: lib/ is layered one way"
exit "$status"
