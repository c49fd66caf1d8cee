#!/bin/sh
# Runs a Python program (usually pytest) on NP ranks with the project's venv
# interpreter. Exits 77 (skipped) with the reason when the venv or a required module
# is missing, so a machine without the Python stack reports skips, not failures.
# Usage: run_python.sh MPIEXEC NP PYTHON MODULES ARGS...   (MODULES: comma-separated)
# NP is a rank count, or HOST:N,HOST:N,... for several "nodes" on this machine (Hydra's
# fork launcher with made-up host names: local and cross communicators of that shape).
#
# In a sanitized build HVD_SANITIZER_PRELOAD names the sanitizer runtime and the C++
# runtime (set by tests/sanitizers/meson.build): the interpreter is not instrumented,
# so they are preloaded into it (and only into it, not into mpiexec).
set -eu
mpiexec=$1 np=$2 python=$3 modules=$4
shift 4
if [ ! -x "$python" ]; then
  echo "skipped: $python not found (scripts/install-deps.sh creates the .venv)"
  exit 77
fi
# Looked up, not imported: importing torch or tensorflow takes seconds, and every rank
# imports them again anyway (a module that is there but broken fails the test).
missing=$("$python" -c '
import importlib.util, sys
for name in sys.argv[1].split(","):
    if importlib.util.find_spec(name) is None:
        print(name)
        break' "$modules" 2>&1) || missing="(the lookup failed: $missing)"
if [ -n "$missing" ]; then
  echo "skipped: Python module '$missing' is not importable by $python"
  exit 77
fi
# mpi4py is built against one MPI; a job of the other cannot load it beside libhvd.
case ",$modules," in
  *,mpi4py,*)
    mpi4py_mpi=$("$python" -c "from mpi4py import MPI; print(MPI.Get_library_version())" 2>/dev/null | head -n 1)
    case "${HVD_TEST_MPI_FLAVOR:-mpich}:$mpi4py_mpi" in
      openmpi:*"Open MPI"*|mpich:*MPICH*) ;;
      *)
        echo "skipped: mpi4py here is built against '$mpi4py_mpi', not this build's ${HVD_TEST_MPI_FLAVOR:-mpich}"
        exit 77 ;;
    esac ;;
esac
# What each rank runs: the interpreter, with the sanitizer runtime in front if any.
if [ "${HVD_SANITIZER_PRELOAD+set}" = set ]; then
  if [ -z "$HVD_SANITIZER_PRELOAD" ]; then
    echo "skipped: the compiler did not name its sanitizer and C++ runtimes, so they cannot be preloaded into $python"
    exit 77
  fi
  set -- "$(cd "$(dirname "$0")/../sanitizers" && pwd)/uninstrumented.sh" "$python" "$@"
else
  set -- "$python" "$@"
fi
case "$np" in
  *:*)
    hosts=$np
    np=0
    for slots in $(echo "$hosts" | tr ',' '\n' | cut -d: -f2); do
      np=$((np + slots))
    done
    set -- -launcher fork -hosts "$hosts" -n "$np" "$@"
    ;;
  *)
    set -- -n "$np" "$@"
    ;;
esac
exec "$mpiexec" "$@"
