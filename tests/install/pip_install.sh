#!/bin/sh
# pip install of the source tree into a fresh venv (which sees Debian's torch and
# numpy, as a user's venv made with --system-site-packages does), then a 2-rank
# horovod.torch job launched by the venv's own horovodrun. Needs PyPI for meson-python
# (pip's isolated build); without it the test is skipped.
# Usage: pip_install.sh SOURCE_DIR PYTHON
set -u
src=$1 python=$2
work=$(mktemp -d /tmp/hvd_pip_install.XXXXXX)
trap 'rm -rf "$work"' EXIT
die() { echo "FAIL: $*" >&2; exit 1; }
unset LD_LIBRARY_PATH HVD_LIBRARY PYTHONPATH

"$python" -m venv --system-site-packages "$work/venv" || die "cannot make a venv"
if ! "$work/venv/bin/pip" download -q --no-deps -d "$work/probe" meson-python >/dev/null 2>&1; then
  echo "skipped: PyPI is not reachable, so pip cannot fetch meson-python to build with"
  exit 77
fi
# What this checks is the packaging (the wheel's layout, its commands, its libhvd found
# first) and a job through it, not the compiler's work, which the suites' own build
# covers: the wheel is built unoptimised and without the CUDA kernels, which makes the
# compile several times shorter (11 minutes at -O3 on a loaded 2-core machine). Setting
# meson options takes repeated setup-args, which Debian's pip 23.0 drops but the last
# of: the venv's pip is updated first (PyPI is reachable: checked above).
"$work/venv/bin/pip" install -q --upgrade pip >"$work/pip.log" 2>&1 ||
  die "pip install --upgrade pip: $(tail -n 30 "$work/pip.log")"
"$work/venv/bin/pip" install -q --no-cache-dir --config-settings=build-dir="$work/build" \
  --config-settings=setup-args=-Doptimization=0 --config-settings=setup-args=-Dcuda=disabled \
  --config-settings=setup-args=-Dnccl=disabled "$src" \
  >"$work/pip.log" 2>&1 || die "pip install: $(tail -n 30 "$work/pip.log")"
opt=$("$python" -c 'import json, sys
print(next(o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == "optimization"))' \
  "$work/build/meson-info/intro-buildoptions.json" 2>/dev/null)
echo "the wheel was built with optimization=${opt:-unknown}"

[ -x "$work/venv/bin/hvdrun" ] || die "pip did not put hvdrun on the venv's PATH"
[ -x "$work/venv/bin/hvd-bench" ] || die "pip did not put hvd-bench on the venv's PATH"
[ -x "$work/venv/bin/hvd-info" ] || die "pip did not put hvd-info on the venv's PATH"
[ -x "$work/venv/bin/horovodrun" ] || die "pip did not put horovodrun on the venv's PATH"
"$work/venv/bin/hvdrun" --version | grep -q "libhvd" || die "hvdrun --version"

cat >"$work/job.py" <<'PY'
import os
import torch
import horovod.torch as hvd
import hvd as libhvd

hvd.init()
lib = libhvd._capi.lib._name
assert lib.startswith(os.environ["VENV"]), f"loaded {lib}, not the venv's libhvd"
fast = libhvd._fastcall.fast  # the wheel builds the C per-call path (python3-dev)
assert fast is not None and fast.__file__.startswith(os.environ["VENV"]), fast
total = hvd.allreduce(torch.full((4,), float(hvd.rank() + 1)), op=hvd.Sum, name="pip.sum")
expected = float(sum(range(1, hvd.size() + 1)))
assert torch.equal(total, torch.full((4,), expected)), total
print(f"rank {hvd.rank()} of {hvd.size()}: ok")
hvd.shutdown()
PY
if ! "$work/venv/bin/python" -c "import torch" >/dev/null 2>&1; then
  echo "skipped: torch is not importable in the venv (python3-torch not installed)"
  exit 77
fi
# Launched as a Horovod job script would: through horovodrun.
VENV="$work/venv" PATH="$work/venv/bin:$PATH" "$work/venv/bin/horovodrun" -np 2 -x VENV \
  "$work/venv/bin/python" "$work/job.py" >"$work/job.log" 2>&1 ||
  die "the 2-rank job failed: $(cat "$work/job.log")"
# The launcher interleaves the ranks' output without regard for lines: count reports.
[ "$(grep -o 'of 2: ok' "$work/job.log" | wc -l)" = 2 ] ||
  die "both ranks should report ok: $(cat "$work/job.log")"
echo "ok: pip install and a 2-rank horovod.torch job through the venv's horovodrun"
