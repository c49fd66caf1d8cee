#!/bin/sh
# Installs this build into a scratch folder (meson install --destdir) and checks that
# the installed tree works from there with no LD_LIBRARY_PATH, as an install under any
# prefix must: the programs and examples find libhvd through their $ORIGIN-relative
# RPATH, hvd.pc is relocatable (the C example builds and runs with README.md's line),
# hvd-info lists the knobs, the Python package loads the libhvd installed with it, and
# every data file lands under share/hvd, and the installed hvdrun runs a job that imports
# `horovod` with PYTHONPATH naming the install's site folder.
# Usage: prefix_install.sh BUILD_DIR MPIEXEC PYTHON PREFIX
set -u
build=$1 mpiexec=$2 python=$3 prefix=$4
work=$(mktemp -d /tmp/hvd_prefix_install.XXXXXX)
trap 'rm -rf "$work"' EXIT
die() { echo "FAIL: $*" >&2; exit 1; }
unset LD_LIBRARY_PATH HVD_LIBRARY PYTHONPATH PKG_CONFIG_PATH
# Programs that are not instrumented but load libhvd (in a sanitized build).
uninstrumented=$(cd "$(dirname "$0")/../sanitizers" && pwd)/uninstrumented.sh

meson install -C "$build" --destdir "$work/root" --no-rebuild --quiet >"$work/install.log" 2>&1 ||
  die "meson install: $(cat "$work/install.log")"
root="$work/root$prefix"
[ -d "$root/share/hvd" ] || die "nothing under $root/share/hvd"
[ ! -e "$root/share/libhvd" ] || die "data also went to share/libhvd"

out=$("$root/bin/hvdrun" --version 2>&1) || die "installed hvdrun --version: $out"
echo "$out" | grep -q "libhvd" || die "hvdrun --version: $out"
# horovodrun: the same program under Horovod's name, a link that finds its data and
# library from where it is installed.
out=$("$root/bin/horovodrun" --version 2>&1) || die "installed horovodrun --version: $out"
echo "$out" | grep -q "libhvd" || die "horovodrun --version: $out"
"$root/bin/hvd-bench" --help >"$work/bench.txt" 2>&1 || die "installed hvd-bench: $(cat "$work/bench.txt")"
"$root/bin/hvd-info" -c >"$work/info.txt" 2>&1 || die "installed hvd-info: $(cat "$work/info.txt")"
grep -q "^HOROVOD_FUSION_THRESHOLD=" "$work/info.txt" || die "hvd-info -c: $(cat "$work/info.txt")"
"$mpiexec" -n 1 "$root/share/hvd/examples/train_linear" >"$work/train.txt" 2>&1 ||
  die "installed example: $(cat "$work/train.txt")"

# A program of the user's, built with pkg-config alone.
pc=$(dirname "$(find "$root" -name hvd.pc | head -n 1)")
[ -n "$pc" ] || die "hvd.pc not installed"
cat >"$work/user.c" <<'C'
#include <hvd/hvd.h>
#include <stdio.h>
int main(void) { printf("%s\n", hvd_version_string()); return hvd_mpi_built() ? 0 : 1; }
C
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs hvd) || die "pkg-config hvd failed"
libdir=$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir hvd)
[ -e "$libdir/libhvd.so.0" ] || die "hvd.pc's libdir $libdir is not the installed one (not relocatable)"
cc "$work/user.c" -o "$work/user" $flags -Wl,-rpath,"$libdir" || die "cannot build against hvd.pc"
"$uninstrumented" "$work/user" >/dev/null || die "the user's program failed"

# The C example, built with exactly the line README.md gives (it needs -lm of its own,
# and the rpath so that it runs without LD_LIBRARY_PATH), then run on 2 ranks.
src=$(cd "$(dirname "$0")/../.." && pwd)
line=$(grep -m 1 '^cc examples/c/train_linear.c ' "$src/README.md") ||
  die "README.md has no line building examples/c/train_linear.c"
mkdir -p "$work/user_tree/examples/c" && cp "$src/examples/c/train_linear.c" "$work/user_tree/examples/c/"
(cd "$work/user_tree" && PKG_CONFIG_PATH="$pc" sh -c "$line") >"$work/cc.txt" 2>&1 ||
  die "README's line failed: $line: $(cat "$work/cc.txt")"
"$mpiexec" -n 2 "$uninstrumented" "$work/user_tree/train_linear" >"$work/linear.txt" 2>&1 ||
  die "the example built by README's line failed (status $?): $(cat "$work/linear.txt")"

# The Python package (and the horovod stand-in, whose folder the .pth file adds when
# the site folder is a real site folder; with PYTHONPATH it is named too).
site=$(dirname "$(find "$root" -name hvd-horovod-compat.pth | head -n 1)")
[ -n "$site" ] || die "the Python packages were not installed"
loaded=$(cd "$work" && PYTHONPATH="$site:$site/hvd_horovod_compat" "$uninstrumented" "$python" -c '
import hvd, horovod
print(hvd._capi.lib._name)
print(getattr(hvd._fastcall.fast, "__file__", "none"))
print(horovod.backend)
') || die "import from the installed tree failed"
# The C per-call path, where the build made it, must come from the install too.
if ls "$build"/bindings/python/_fastpath*.so >/dev/null 2>&1; then
  echo "$loaded" | sed -n 2p | grep -q "^$root/" ||
    die "hvd._fastpath came from $(echo "$loaded" | sed -n 2p), not the installed package"
fi
echo "$loaded" | head -n 1 | grep -q "^$root/" || die "hvd loaded $(echo "$loaded" | head -n 1), not the installed libhvd"
[ "$(echo "$loaded" | tail -n 1)" = libhvd ] || die "horovod is not the stand-in: $loaded"

# A Horovod user's job through the installed hvdrun, with PYTHONPATH naming only the
# site folder (where the .pth file that adds the stand-in's folder is not read):
# hvdrun adds the stand-in's folder for the ranks, and says so with --verbose.
cat >"$work/my_train.py" <<'PY'
import horovod, hvd
hvd.init()
print(f"rank {hvd.rank()} of {hvd.size()}: horovod from {horovod.backend}", flush=True)
hvd.shutdown()
PY
(cd "$work" && PYTHONPATH="$site" "$root/bin/hvdrun" -np 2 -H localhost:2 "$python" my_train.py) \
  >"$work/hvdrun.txt" 2>&1 || die "hvdrun with PYTHONPATH=$site (status $?): $(cat "$work/hvdrun.txt")"
for r in 0 1; do
  grep -q "rank $r of 2: horovod from libhvd$" "$work/hvdrun.txt" ||
    die "rank $r did not import the stand-in: $(cat "$work/hvdrun.txt")"
done
PYTHONPATH="$site" "$root/bin/hvdrun" --verbose --dry-run -np 2 "$python" my_train.py \
  >"$work/dry.txt" 2>&1 || die "hvdrun --verbose --dry-run: $(cat "$work/dry.txt")"
grep -qF "PYTHONPATH names this install's site folder but not $site/hvd_horovod_compat" "$work/dry.txt" ||
  die "--verbose does not say PYTHONPATH was completed: $(cat "$work/dry.txt")"
# PYTHONPATH naming the folder already, or not naming the site folder: left alone.
PYTHONPATH="$site:$site/hvd_horovod_compat" "$root/bin/hvdrun" --verbose --dry-run -np 2 "$python" x.py \
  >"$work/dry.txt" 2>&1 || die "hvdrun --dry-run: $(cat "$work/dry.txt")"
! grep -q "names this install's site folder" "$work/dry.txt" || die "PYTHONPATH changed: $(cat "$work/dry.txt")"
echo "ok: installed under $root works"
