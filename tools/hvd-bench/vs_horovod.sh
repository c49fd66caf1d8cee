#!/usr/bin/env bash
# libhvd beside real Horovod 0.28.1, in the same minutes: one Python program
# (tools/hvd-bench/vs_horovod_driver.py, `import horovod.torch as hvd`, torch CPU
# tensors) run over each library in turn, 2 ranks, over shared memory and on the
# network lab (2 nodes x 1 rank, link unlimited), alternating horovod, libhvd,
# horovod, libhvd ...; then a table per place: case, Horovod median, libhvd median,
# libhvd speed-up (Horovod time / libhvd time), raw-MPI limit, each vs the limit.
#
#   tools/hvd-bench/vs_horovod.sh [--venv DIR] [--build DIR] [--rounds N] [--steps N]
#       [--warmup N] [--cases LIST] [--no-lab] [--no-shm] [--json FILE]
#       [--mpi4py-from PYTHON] [--interleave] [--check-args]
#
#   --venv DIR     Horovod's venv. Made when DIR holds none: /usr/bin/python3 -m venv
#                  --system-site-packages DIR, then Horovod 0.28.1 from PyPI built
#                  with PyTorch and MPI (needs Debian's cmake, libtorch-dev and
#                  pybind11-dev; about 10 minutes on 2 cores). Default .venv-horovod
#   --build DIR    libhvd's build directory (default build)
#   --rounds N     runs of each library per place (default 2)
#   --steps N      timed steps per case (default 20; warm-up --warmup, default 3)
#   --cases LIST   of resnet50,bert_base,many_small,latency,optimizer (default all)
#   --no-lab       shared memory only (the lab needs root)    --no-shm  the lab only
#   --json FILE    every run's JSON lines (with "place", "round", "load") and the
#                  table's rows ("kind": "summary") into FILE
#   --mpi4py-from PYTHON  an interpreter whose mpi4py (built against this MPI) both
#                  libraries' runs import for the raw-MPI reference (default: the
#                  project's .venv/bin/python, else Horovod's venv); none found: no
#                  limit column
#   --interleave   also measure the reference before each library step (the driver's
#                  --interleave: libhvd against a limit of the same seconds; beside
#                  Horovod the reference slows severalfold, see the driver)
#   --check-args   check the arguments and the driver's, print the plan, run nothing
#
# Both libraries run under the same interpreter (the venv's, which sees the system's
# torch). Real Horovod: the venv's own horovod package. libhvd: PYTHONPATH holds
# bindings/python, HVD_LIBRARY names the build's libhvd and HVD_HOROVOD_COMPAT=force
# (the stand-in would otherwise step aside for the real Horovod it finds in the
# venv). Neither library is tuned: both run with their defaults. MPIEXEC (default
# /usr/bin/mpiexec.mpich) is the launcher; Horovod's venv must be built against the
# same MPI.
set -euo pipefail
self=$(readlink -f "$0")
here=$(dirname "$self")
root=$(cd "$here/../.." && pwd)
netlab=$root/scripts/netlab.sh
driver=$here/vs_horovod_driver.py
table=$here/vs_horovod_table.py
export MPIEXEC=${MPIEXEC:-/usr/bin/mpiexec.mpich}

usage() { sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

venv=$root/.venv-horovod build=$root/build rounds=2 steps=20 warmup=3 cases=
lab=1 shm=1 json= mpi4py_from= check=0 in_lab= interleave=
while [ $# -gt 0 ]; do
  case $1 in
    --venv) venv=${2:?--venv DIR}; shift ;;
    --build) build=${2:?--build DIR}; shift ;;
    --rounds) rounds=${2:?--rounds N}; shift ;;
    --steps) steps=${2:?--steps N}; shift ;;
    --warmup) warmup=${2:?--warmup N}; shift ;;
    --cases) cases=${2:?--cases LIST}; shift ;;
    --no-lab) lab=0 ;;
    --no-shm) shm=0 ;;
    --json) json=${2:?--json FILE}; shift ;;
    --mpi4py-from) mpi4py_from=${2:?--mpi4py-from PYTHON}; shift ;;
    --interleave) interleave=--interleave ;;
    --check-args) check=1 ;;
    --in-lab) in_lab=${2:?}; shift ;;  # internal: re-entered by netlab.sh run, results file
    -h|--help) usage ;;
    *) echo "vs_horovod.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
for n in "$rounds" "$steps" "$warmup"; do
  case $n in ''|*[!0-9]*) echo "vs_horovod.sh: --rounds, --steps, --warmup take a number, not '$n'" >&2; exit 2 ;; esac
done
[ "$rounds" -ge 1 ] && [ "$steps" -ge 1 ] || { echo "vs_horovod.sh: --rounds and --steps must be >= 1" >&2; exit 2; }
[ "$lab$shm" != 00 ] || { echo "vs_horovod.sh: --no-lab and --no-shm leave nothing to run" >&2; exit 2; }
venv=$(readlink -m "$venv") build=$(readlink -m "$build")
[ -z "$json" ] || json=$(readlink -m "$json")
lib=$build/lib/libhvd.so.0
driver_args=(--steps "$steps" --warmup "$warmup" ${cases:+--cases "$cases"} $interleave)

if [ "$check" = 1 ]; then
  /usr/bin/python3 "$driver" "${driver_args[@]}" --dry-run
  echo "venv: $venv ($( [ -x "$venv/bin/python" ] && echo present || echo 'to be built'))"
  echo "library: $lib ($( [ -f "$lib" ] && echo present || echo missing))"
  echo "rounds: $rounds; places:$( [ "$shm" = 1 ] && echo ' shared memory')$( [ "$lab" = 1 ] && echo ' lab')"
  exit 0
fi
[ -f "$lib" ] || { echo "vs_horovod.sh: no $lib: build libhvd first (meson setup build && ninja -C build)" >&2; exit 2; }

# ---- Horovod's venv ---------------------------------------------------------

horovod_ok() {
  [ -x "$venv/bin/python" ] &&
    [ "$(cd / && "$venv/bin/python" -c 'import horovod.torch, horovod; print(horovod.__version__)' 2>/dev/null)" = 0.28.1 ]
}
if [ -z "$in_lab" ] && ! horovod_ok; then
  missing=
  for pkg in cmake libtorch-dev pybind11-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
  done
  [ -z "$missing" ] || { echo "vs_horovod.sh: building Horovod needs:$missing (apt-get install$missing)" >&2; exit 2; }
  echo "vs_horovod.sh: building Horovod 0.28.1 from PyPI into $venv (about 10 minutes on 2 cores)" >&2
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
  HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 \
    HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITHOUT_GLOO=1 \
    "$venv/bin/pip" install --no-cache-dir horovod==0.28.1 >&2
  horovod_ok || { echo "vs_horovod.sh: $venv/bin/python cannot import horovod.torch 0.28.1" >&2; exit 1; }
fi
python=$venv/bin/python

# ---- mpi4py for the reference -----------------------------------------------

# A folder holding only a link to an mpi4py package, put on both runs' sys.path, so
# Horovod's venv sees no more of another environment than mpi4py.
work=$(mktemp -d "${TMPDIR:-/tmp}/vs_horovod.XXXXXX")
trap 'rm -rf "$work"' EXIT
m4p_dir=
if [ -z "$in_lab" ]; then
  for candidate in ${mpi4py_from:-$root/.venv/bin/python $python}; do
    [ -x "$candidate" ] || continue
    pkg=$(cd / && "$candidate" -c 'import mpi4py, os; print(os.path.dirname(mpi4py.__file__))' 2>/dev/null) || continue
    mkdir -p "$work/mpi4py-path"
    ln -sfn "$pkg" "$work/mpi4py-path/mpi4py"
    if (cd / && "$python" -c "import sys; sys.path.insert(0, '$work/mpi4py-path'); import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; v = MPI.Get_library_version(); sys.exit('MPICH' not in v and 'Open MPI' not in v)") >/dev/null 2>&1; then
      m4p_dir=$work/mpi4py-path
      break
    fi
    rm -rf "$work/mpi4py-path"
  done
  [ -n "$m4p_dir" ] || echo "vs_horovod.sh: no mpi4py for $python (--mpi4py-from): no raw-MPI limit" >&2
else
  m4p_dir=${VS_HOROVOD_MPI4PY:-}
fi

# ---- runs -------------------------------------------------------------------

# one_run PLACE ROUND LIBRARY OUT: one job of the driver, its JSON lines tagged.
one_run() {
  local place=$1 round=$2 library=$3 out=$4 env_args launch load
  env_args=(env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1)
  if [ "$library" = libhvd ]; then
    env_args+=(PYTHONPATH="$root/bindings/python" HVD_LIBRARY="$lib" HVD_HOROVOD_COMPAT=force)
  else
    env_args+=(PYTHONPATH= HVD_HOROVOD_COMPAT=)
  fi
  if [ -n "$in_lab" ]; then
    launch=("$netlab" mpiexec "$NETLAB_DIR" 1 -n 2)
  else
    launch=("$MPIEXEC" -n 2)
  fi
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  # Horovod warns once per case that its response cache (1024 entries) evicted the
  # previous case's names; each case's own names fit, so its steady state is cached.
  echo "--- $place, round $round, $library (load before: $load)" >&2
  (cd / && "${launch[@]}" "${env_args[@]}" "$python" "$driver" "${driver_args[@]}" \
      ${m4p_dir:+--mpi4py-path "$m4p_dir"}) > "$work/run.out" 2> "$work/run.err" || {
    echo "vs_horovod.sh: the $library run failed ($place, round $round):" >&2
    grep -v 'evicted from cache' "$work/run.err" | tail -n 30 >&2
    return 1
  }
  grep -v 'evicted from cache' "$work/run.err" | grep -v '^\s*$' | tail -n 5 >&2 || true
  "$python" -c '
import json, sys
place, rnd, before, after = sys.argv[1:5]
for line in sys.stdin:
    if line.startswith("{"):
        row = json.loads(line)
        row.update(place=place, round=int(rnd), load_before=before, load_after=after)
        print(json.dumps(row))' "$place" "$round" "$load" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    < "$work/run.out" >> "$out"
  grep '^{' "$work/run.out" | cut -c1-160 >&2
}

# rounds PLACE OUT: horovod, libhvd, horovod, libhvd, ...
run_rounds() {
  local k
  for k in $(seq 1 "$rounds"); do
    one_run "$1" "$k" horovod "$2"
    one_run "$1" "$k" libhvd "$2"
  done
}

if [ -n "$in_lab" ]; then
  run_rounds "lab, 2 nodes x 1 rank, link unlimited" "$in_lab"
  exit 0
fi

results=$work/results.jsonl
: > "$results"
echo "vs_horovod.sh: $(uptime)" >&2
echo "vs_horovod.sh: libhvd $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), Horovod $venv, $("$MPIEXEC" --version 2>/dev/null | sed -n 's/^ *Version: *//p' | head -n 1 | sed 's/^/MPICH /')" >&2
if [ "$shm" = 1 ]; then
  run_rounds "shared memory, 2 ranks (mpiexec -n 2)" "$results"
fi
if [ "$lab" = 1 ]; then
  pass=(--build "$build" --venv "$venv" --rounds "$rounds" --steps "$steps" --warmup "$warmup")
  [ -z "$cases" ] || pass+=(--cases "$cases")
  [ -z "$interleave" ] || pass+=(--interleave)
  status=0
  VS_HOROVOD_MPI4PY=$m4p_dir "$netlab" run -n 2 -- "$self" "${pass[@]}" --in-lab "$results" || status=$?
  if [ "$status" = 77 ]; then
    echo "vs_horovod.sh: the lab cannot be made here (skipped; --no-lab runs shared memory only)" >&2
  elif [ "$status" != 0 ]; then
    echo "vs_horovod.sh: the lab's runs failed (status $status)" >&2
    exit "$status"
  fi
fi
echo "vs_horovod.sh: $(uptime)" >&2
[ -z "$json" ] || cp "$results" "$json"
"$python" "$table" "$results" ${json:+--json "$json"}
