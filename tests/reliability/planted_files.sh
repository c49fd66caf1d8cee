#!/bin/sh
# Files and markers no other user can forge: a root job writes into a shared folder
# (mode 1777) where an unprivileged user (nobody) planted links, files and a FIFO.
#   planted_files.sh CASE HVDRUN PROGRAM [MPI_FLAVOR]
# library-files: links at the timeline's, the step summary's and the autotune log's
#   names, pointing at root-only files. The job succeeds, the targets are unchanged,
#   and the job's files are its own regular files under those names.
# output-folder: hvdrun --output-filename into the shared folder, with links planted
#   at Hydra's per-rank output names; the rank itself leaves a marker without the
#   job's token and a FIFO in the markers' folder. The job succeeds (exit 0, not the
#   forged rank's 3), hvdrun warns that others can write the folder, says at --verbose
#   that it ignored both, does not block on the FIFO, and the targets are unchanged.
# Needs root (to be the victim) and setpriv (to plant as nobody): 77 (skipped) without.
set -u
case_name=$1 hvdrun=$2 program=$3 flavor=${4:-mpich}
[ "$(id -u)" = 0 ] || { echo "skipped: the victim job must run as root"; exit 77; }
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null ||
  { echo "skipped: needs setpriv, user nobody and group nogroup"; exit 77; }

work=$(mktemp -d /tmp/planted_files.XXXXXX)
trap 'rm -rf "$work"' EXIT
die() { echo "FAIL ($case_name): $*" >&2; exit 1; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

# nobody may pass through $work to the shared folder, never into private/.
chmod 0711 "$work"
mkdir -m 0700 "$work/private"
mkdir "$work/shared" && chmod 1777 "$work/shared"
shared=$work/shared
# A root-only file per planted link, and a copy to compare with.
target() {
  printf 'root only: %s\n' "$1" >"$work/private/$1"
  chmod 0600 "$work/private/$1"
  cp -p "$work/private/$1" "$work/private/$1.orig"
  as_nobody ln -s "$work/private/$1" "$2" || die "nobody cannot plant $2"
}
targets_unchanged() {
  for t in "$@"; do
    cmp -s "$work/private/$t" "$work/private/$t.orig" || die "root-only file $t was overwritten: $(head -c 200 "$work/private/$t")"
  done
}
regular_of_root() {
  [ -f "$1" ] && [ ! -L "$1" ] || die "$1 is not a regular file: $(ls -l "$1" 2>&1)"
  [ "$(stat -c %u "$1")" = 0 ] || die "$1 is not root's: $(ls -l "$1")"
}

case "$case_name" in
library-files)
  target timeline "$shared/timeline.json"
  target summary "$shared/summary.json"
  target autotune "$shared/autotune.csv"
  HVD_SUMMARY_FILE="$shared/summary.json" "$hvdrun" -np 2 -H localhost:2 \
    --timeline-filename "$shared/timeline.json" --autotune --autotune-log-file "$shared/autotune.csv" \
    "$program" >"$work/out" 2>"$work/err" || die "the job failed: $(tail -5 "$work/err")"
  targets_unchanged timeline summary autotune
  for f in timeline.json summary.json autotune.csv; do regular_of_root "$shared/$f"; done
  head -c 1 "$shared/timeline.json" | grep -q '\[' || die "timeline: $(head -c 200 "$shared/timeline.json")"
  grep -q '"ranks"' "$shared/summary.json" || die "summary: $(head -c 200 "$shared/summary.json")"
  head -1 "$shared/autotune.csv" | grep -q '^hierarchical_allreduce,' || die "autotune log: $(head -2 "$shared/autotune.csv")"
  # No temporary file left beside them.
  [ -z "$(find "$shared" -name '.*' ! -name . )" ] || die "left behind: $(ls -a "$shared")"
  ;;
output-folder)
  target stderr0 "$shared/rank.0.stderr"
  target stdout1 "$shared/rank.1.stdout"
  # Rank 0 finds the markers' folder on its monitor's command line and forges there a
  # marker of rank 1 failing with status 3, and a FIFO.
  cat >"$work/rank.sh" <<'SCRIPT'
r=${PMI_RANK:-$OMPI_COMM_WORLD_RANK}
if [ "$r" = 0 ]; then
  dir=$(tr '\0' '\n' </proc/$PPID/cmdline | sed -n '/^--events$/{n;p;q;}')
  printf '\036hvdrun:rank-exit rank=1 code=3 signal=0 time=1.000000 pid=1 host=x mpi=hvd\n' >"$dir/forged"
  mkfifo "$dir/fifo"
fi
echo "out $r"
echo "err $r" >&2
SCRIPT
  timeout 120 "$hvdrun" --verbose -np 2 -H localhost:2 --output-filename "$shared" sh "$work/rank.sh" \
    >"$work/out" 2>"$work/err"
  status=$?
  [ "$status" != 124 ] || die "hvdrun blocked (on the FIFO?): $(tail -5 "$work/err")"
  [ "$status" = 0 ] || die "status $status, expected 0: $(tail -5 "$work/err")"
  targets_unchanged stderr0 stdout1
  # rank.R.stdout and .stderr are Hydra's names, which hvdrun makes the job's own files;
  # Open MPI writes DIR/1/rank.R/ instead (docs/security.md: keep DIR the job's own).
  if [ "$flavor" != openmpi ]; then
    for r in 0 1; do
      regular_of_root "$shared/rank.$r.stdout"
      [ "$(cat "$shared/rank.$r.stdout")" = "out $r" ] || die "rank.$r.stdout: $(cat "$shared/rank.$r.stdout")"
      [ "$(cat "$shared/rank.$r.stderr")" = "err $r" ] || die "rank.$r.stderr: $(cat "$shared/rank.$r.stderr")"
    done
  fi
  grep -q "warning: --output-filename $shared can be written by other users (mode 1777)" "$work/err" ||
    die "no warning about the shared folder: $(cat "$work/err")"
  grep -q "ignored .*/forged: without the job's token" "$work/err" || die "forged marker not named: $(cat "$work/err")"
  grep -q "ignored .*/fifo: a FIFO" "$work/err" || die "FIFO not named: $(cat "$work/err")"
  ! grep -q "the job failed" "$work/err" || die "the forged marker was believed: $(cat "$work/err")"
  # The markers' folder is gone with the job.
  [ -z "$(find "$shared" -name '.hvdrun-events.*')" ] || die "markers' folder left: $(ls -a "$shared")"
  ;;
*)
  die "unknown case"
  ;;
esac
echo "ok: $case_name"
