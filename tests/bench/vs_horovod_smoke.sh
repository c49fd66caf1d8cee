#!/bin/sh
# tools/hvd-bench/vs_horovod.sh and its driver, cheaply, without real Horovod: both
# take and refuse arguments as documented, and the driver runs one tiny step of two
# cases over libhvd's horovod stand-in on 2 ranks, right, in the documented JSON, which
# the table script then reads. Exits 77 when no interpreter here has torch and numpy.
#   vs_horovod_smoke.sh MPIEXEC LIBHVD PYTHON...   (the first PYTHON with torch is used)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tools=$here/../../tools/hvd-bench
root=$(cd "$here/../.." && pwd)
mpiexec=$1 lib=$2
shift 2
python=
for candidate in "$@"; do
  if [ -x "$candidate" ] && "$candidate" -c 'import torch, numpy' >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
[ -n "$python" ] || { echo "skipped: no interpreter with torch and numpy among: $*"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/vs_horovod_smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect STATUS CMD...: CMD exits with STATUS.
expect() {
  want=$1; shift
  status=0
  "$@" > "$work/out" 2>&1 || status=$?
  [ "$status" = "$want" ] || { cat "$work/out" >&2; fail "'$*' exited $status, expected $want"; }
}

driver=$tools/vs_horovod_driver.py
expect 0 "$python" "$driver" --help
expect 2 "$python" "$driver" --cases resnet50,nope
expect 2 "$python" "$driver" --steps 0
expect 2 "$python" "$driver" --many-small 10by4
expect 0 "$python" "$driver" --dry-run
[ "$(grep -c '"case"' "$work/out")" = 5 ] || fail "--dry-run: expected 5 cases, got: $(cat "$work/out")"
grep -q '"case": "resnet50", "tensors": 161, "bytes": 102228128' "$work/out" ||
  fail "--dry-run: the resnet50 workload is not hvd-bench's: $(cat "$work/out")"

script=$tools/vs_horovod.sh
expect 2 "$script" --help
expect 2 "$script" --rounds two
expect 2 "$script" --no-lab --no-shm
expect 2 "$script" --bogus
expect 0 "$script" --check-args --rounds 3 --steps 2 --cases latency --no-lab
grep -q '"case": "latency"' "$work/out" && grep -q '^rounds: 3; places: shared memory$' "$work/out" ||
  fail "--check-args: $(cat "$work/out")"

# One tiny step over libhvd, 2 ranks. In a sanitized build the interpreter, which is
# not instrumented, gets the sanitizer's runtime preloaded (tests/sanitizers/uninstrumented.sh).
if [ "${HVD_SANITIZER_PRELOAD+set}" = set ] && [ -z "$HVD_SANITIZER_PRELOAD" ]; then
  echo "skipped: the compiler did not name its sanitizer runtime, so it cannot be preloaded into $python"
  exit 77
fi
HVD_LIBRARY=$lib PYTHONPATH=$root/bindings/python HVD_HOROVOD_COMPAT=force \
  OMP_NUM_THREADS=1 HOROVOD_LOG_LEVEL=warning \
  "$mpiexec" -n 2 "$here/../sanitizers/uninstrumented.sh" "$python" "$driver" --cases many_small,latency --many-small 10x64 \
  --steps 1 --warmup 1 --latency-inner 2 --interleave > "$work/run" ||
  fail "the driver over libhvd on 2 ranks failed"
cat "$work/run"
"$python" - "$work/run" "$work/tagged" <<'EOF' || fail "the driver's JSON"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
assert [r["case"] for r in rows] == ["many_small", "latency"], rows
for r in rows:
    assert r["library"] == "libhvd" and r["ranks"] == 2 and r["wrong"] == 0, r
    assert 0 < r["min_ms"] <= r["median_ms"] <= r["max_ms"], r
    if "limit_ms" in r:
        assert r["limit_ms"]["median"] > 0 and r["limit_strategy"], r
        # measured again beside each step (--interleave)
        assert r["interleaved_limit_ms"]["median"] > 0 and r["vs_interleaved_limit"] > 0, r
assert rows[0]["tensors"] == 10 and rows[0]["bytes"] == 10 * 64 * 4, rows[0]
with open(sys.argv[2], "w") as f:
    for r in rows:
        for lib in ("horovod", "libhvd"):  # the table needs both libraries' rows
            f.write(json.dumps(dict(r, library=lib, place="smoke", round=1)) + "\n")
EOF
"$python" "$tools/vs_horovod_table.py" "$work/tagged" --json "$work/summary" > "$work/table" ||
  fail "the table script"
cat "$work/table"
# The ceiling column: Horovod's time over its limit, wherever a limit was measured.
"$python" - "$work/summary" <<'EOF' || fail "the summary's speed-up at the limit"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert rows and all(r["kind"] == "summary" for r in rows), rows
for r in rows:
    if "limit_ms" in r:
        assert abs(r["speedup_at_limit"] * r["horovod_vs_limit"] - 1) < 1e-9, r
    else:
        assert "speedup_at_limit" not in r, r
EOF
grep -q '^| 10 x 0.25 KB | .* | 1.00 x |' "$work/table" && grep -q '^| lone 4 KB | .* | 1.00 x |' "$work/table" ||
  fail "the table lacks a case or the speed-up column"
echo "ok"
