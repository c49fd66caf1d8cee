#!/bin/sh
# Runs a Python program (usually pytest) on NP ranks with the project's venv
# interpreter. Exits 77 (skipped) with the reason when the venv or a required module
# is missing, so a machine without the Python stack reports skips, not failures.
# Usage: run_python.sh MPIEXEC NP PYTHON MODULES ARGS...   (MODULES: comma-separated)
# NP is a rank count, or HOST:N,HOST:N,... for several "nodes" on this machine (Hydra's
# fork launcher with made-up host names: local and cross communicators of that shape).
set -eu
mpiexec=$1 np=$2 python=$3 modules=$4
shift 4
case "$np" in
  *:*)
    hosts=$np
    np=0
    for slots in $(echo "$hosts" | tr ',' '\n' | cut -d: -f2); do
      np=$((np + slots))
    done
    set -- -launcher fork -hosts "$hosts" -n "$np" "$python" "$@"
    ;;
  *)
    set -- -n "$np" "$python" "$@"
    ;;
esac
if [ ! -x "$python" ]; then
  echo "skipped: $python not found (scripts/install-deps.sh creates the .venv)"
  exit 77
fi
for module in $(echo "$modules" | tr ',' ' '); do
  if ! "$python" -c "import $module" >/dev/null 2>&1; then
    echo "skipped: Python module '$module' is not importable by $python"
    exit 77
  fi
done
exec "$mpiexec" "$@"
