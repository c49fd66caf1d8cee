#!/bin/sh
# A fault struck on the lab in the middle of a large allreduce of two nodes x 1 rank:
#   fault.sh NETLAB WORKER link-down   node 1's data link goes down: the allreduce can
#                                      never finish, and only libhvd's watchdog ends
#                                      the job (HVD_OP_TIMEOUT_SECONDS)
#   fault.sh NETLAB WORKER node-loss   every process of node 1 is killed
#   HVDRUN=path fault.sh ...           the same job through hvdrun; after node-loss,
#                                      hvdrun's last line names the lost node and its
#                                      rank ("host NODE was lost (rank 1)")
# Passes when the job ends non-zero within the op timeout plus kSlack seconds of the
# fault (link-down: with a stderr line "libhvd: watchdog: ..." naming
# HVD_OP_TIMEOUT_SECONDS and the tensor, and before it the warning that the allreduce
# has been in flight past the stall warning time), and no process is left on any node;
# through hvdrun, nor an Open MPI session directory of the job's (/tmp/ompi.NODE.UID/...).
set -eu

netlab=$1 worker=$2 fault=$3
op_timeout=4     # HVD_OP_TIMEOUT_SECONDS given to the job
stall_warn=1     # HOROVOD_STALL_CHECK_TIME_SECONDS: the in-flight warning comes first
# Waits, scaled for slow machines by HVD_TEST_TIMEOUT_MULTIPLIER (scripts/run-tests.sh).
m=${HVD_TEST_TIMEOUT_MULTIPLIER:-1}
slack=$((10 * m))         # seconds beyond it: the launcher's cleanup on a loaded machine
start_bound=$((120 * m))  # for the job to reach its large allreduce
grace=$((10 * m))         # for the nodes' processes to be gone once the launcher returned
tensor=netlab.fault.large

case $fault in link-down|node-loss) ;; *) echo "unknown fault '$fault'" >&2; exit 2 ;; esac

if [ -z "${NETLAB_DIR:-}" ]; then
  # 200 Mbit/s: one 32 MiB allreduce lasts about a second, so the fault lands in it.
  exec "$netlab" run -n 2 -r 200mbit -- "$0" "$@"
fi

now() { date +%s.%N; }
elapsed() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }
over() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
fail() {
  echo "FAIL: $*" >&2
  echo "--- job stderr" >&2; cat "$NETLAB_DIR/job.err" >&2 || true
  exit 1
}

# Open MPI's session directories of the lab's nodes before the job: the job's own are
# those that appear.
session_dirs() {
  for node in $("$netlab" nodes "$NETLAB_DIR"); do
    ls -d "${TMPDIR:-/tmp}/ompi.$node."*/* 2>/dev/null || true
  done
}
sessions_before=$(session_dirs)

mkfifo "$NETLAB_DIR/ready"
if [ -n "${HVDRUN:-}" ]; then how=hvdrun flag=-np; else how=mpiexec flag=-n; fi
HVD_OP_TIMEOUT_SECONDS=$op_timeout HOROVOD_STALL_CHECK_TIME_SECONDS=$stall_warn \
  "$netlab" "$how" "$NETLAB_DIR" 1 $flag 2 "$worker" "$NETLAB_DIR/ready" \
  > "$NETLAB_DIR/job.out" 2> "$NETLAB_DIR/job.err" &
job=$!

# Rank 0 writes one line just before the allreduce the fault is meant for.
if ! timeout "$start_bound" head -n 1 "$NETLAB_DIR/ready" > /dev/null; then
  kill -KILL $job 2>/dev/null || true
  fail "the job did not reach its large allreduce within ${start_bound} s"
fi

t0=$(now)
before=$(wc -c < "$NETLAB_DIR/job.err")  # what the job said before the fault
case $fault in
  link-down) "$netlab" link-down "$NETLAB_DIR" 1 ;;
  node-loss) "$netlab" kill "$NETLAB_DIR" 1 ;;
esac
echo "$fault of node 1 at $(date -u +%T.%N)"

# Waits for the launcher to end, at most the bound (tail --pid: no polling).
bound=$((op_timeout + slack))
timeout "$bound" tail --pid=$job -s 0.1 -f /dev/null || kill -KILL $job 2>/dev/null || true
took=$(elapsed "$t0")
status=0
wait $job || status=$?
echo "job ended with status $status ${took} s after the fault"

over "$took" "$bound" && fail "the job did not end within ${bound} s of the fault (HVD_OP_TIMEOUT_SECONDS=$op_timeout)"
[ "$status" != 0 ] || fail "the job exited 0 after losing a node"
if [ "$fault" = link-down ]; then
  line=$(grep '^libhvd: watchdog:' "$NETLAB_DIR/job.err" | grep 'HVD_OP_TIMEOUT_SECONDS' | grep -F "$tensor" | head -n 1)
  [ -n "$line" ] || fail "no stderr line starting 'libhvd: watchdog:' with HVD_OP_TIMEOUT_SECONDS and '$tensor'"
  echo "watchdog said: $line"
  # The stuck rank's allreduce, or its peer's negotiation round for the next one.
  warning=$(tail -c +$((before + 1)) "$NETLAB_DIR/job.err" | grep -F "'$tensor'" |
    grep 'has been in flight for' | grep 'HVD_OP_TIMEOUT_SECONDS' | tail -n 1)
  [ -n "$warning" ] || fail "no warning after the fault that the allreduce of '$tensor' has been in flight past HOROVOD_STALL_CHECK_TIME_SECONDS=$stall_warn"
  echo "last warning: $warning"
  echo "--- the job's lines after the fault"
  tail -c +$((before + 1)) "$NETLAB_DIR/job.err" | grep -E 'libhvd|WARNING' | head -n 20
fi
if [ -n "${HVDRUN:-}" ] && [ "$fault" = node-loss ]; then
  lost=$("$netlab" nodes "$NETLAB_DIR" | sed -n 2p)
  last=$(tail -n 1 "$NETLAB_DIR/job.err")
  echo "hvdrun's last line: $last"
  case $last in
    "hvdrun: the job failed: host $lost was lost (rank 1)"*) ;;
    *) fail "hvdrun's last line does not say 'the job failed: host $lost was lost (rank 1)'" ;;
  esac
fi

waited=0
while [ -n "$("$netlab" pids "$NETLAB_DIR")" ]; do
  [ $waited -lt $((grace * 10)) ] || {
    "$netlab" pids "$NETLAB_DIR" | xargs -r ps -o pid,args -p >&2
    fail "processes left on the nodes ${grace} s after the job ended"
  }
  sleep 0.1; waited=$((waited + 1))
done
echo "no process left on any node"

left=$(session_dirs | grep -vxF "$sessions_before" || true)
if [ -z "${HVDRUN:-}" ]; then
  # mpirun itself leaves its lost daemon's: this test's own, removed.
  [ -z "$left" ] || { echo "mpirun left $left; removed"; rm -rf $left; }
  for d in $left; do rmdir "${d%/*}" 2>/dev/null || true; done
  exit 0
fi
[ -z "$left" ] || fail "session directories of the job left behind: $left"
echo "no session directory of the job left behind"
