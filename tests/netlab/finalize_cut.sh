#!/bin/sh
# A node cut off after the work is done: a job of three nodes x 1 rank under hvdrun
# runs its collectives and hvd_shutdown; once every rank has said so (a line each on a
# named pipe, not a pause), node 1 loses both its links (the data network and the
# launcher's), and only then do the ranks return from main, into MPI_Finalize (libhvd's
# exit handler, bounded by HVD_FINALIZE_TIMEOUT_SECONDS).
#   HVDRUN=path finalize_cut.sh NETLAB WORKER
# Passes when hvdrun ends within the finalize bound plus slack of the cut, with a
# status and a last line of hvdrun's that say how the job ended, every rank having
# either finalized or said that it gave up waiting for MPI_Finalize, and, shortly
# after, no process of the job left anywhere (the lab's teardown then checks that its
# namespaces are gone).
set -eu

netlab=$1 worker=$2
finalize_timeout=3  # HVD_FINALIZE_TIMEOUT_SECONDS given to the job
np=3
m=${HVD_TEST_TIMEOUT_MULTIPLIER:-1}
# hvdrun ends a launcher left waiting on a node it no longer hears from (its ranks'
# monitors say they are alive every 5 s) 20 s after that node's last word; then the
# launcher's own ending on a loaded machine.
slack=$((40 * m))
start_bound=$((120 * m))  # for the job's collectives
grace=$((10 * m))         # for the nodes' processes to be gone once hvdrun returned

if [ -z "${NETLAB_DIR:-}" ]; then
  exec "$netlab" run -n $np -- "$0" "$@"
fi
[ -n "${HVDRUN:-}" ] || { echo "finalize_cut.sh runs the job through hvdrun: set HVDRUN" >&2; exit 2; }

now() { date +%s.%N; }
elapsed() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }
over() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
fail() {
  echo "FAIL: $*" >&2
  echo "--- job stderr" >&2; cat "$NETLAB_DIR/job.err" >&2 || true
  exit 1
}

done_pipe=$NETLAB_DIR/done go_pipe=$NETLAB_DIR/go
mkfifo "$done_pipe" "$go_pipe"
# Both held open read-write here all along: the ranks' opens never wait for this
# script, a rank's line is never lost, and the bytes written to GO stay there for a
# rank that opens it late.
exec 3<>"$done_pipe" 4<>"$go_pipe"

HVD_FINALIZE_TIMEOUT_SECONDS=$finalize_timeout \
  "$netlab" hvdrun "$NETLAB_DIR" 1 -np $np "$worker" "$done_pipe" "$go_pipe" \
  > "$NETLAB_DIR/job.out" 2> "$NETLAB_DIR/job.err" 3>&- 4>&- &
job=$!

# One line per rank once its work is done.
k=0
while [ $k -lt $np ]; do
  if ! line=$(timeout "$start_bound" sh -c 'IFS= read -r l <&3 && echo "$l"'); then
    kill -KILL $job 2>/dev/null || true
    fail "only $k of $np ranks finished their collectives within ${start_bound} s"
  fi
  echo "$line"
  k=$((k + 1))
done

cut=$("$netlab" nodes "$NETLAB_DIR" | sed -n 2p)
"$netlab" link-down "$NETLAB_DIR" 1 all
t0=$(now)
echo "node 1 ($cut) cut off (data and control links) at $(date -u +%T.%N)"
printf '%*s' $np '' >&4  # one byte for each rank: on to MPI_Finalize

bound=$((finalize_timeout + slack))
if ! timeout "$bound" tail --pid=$job -s 0.1 -f /dev/null; then
  # hvdrun ends its launcher's process group on SIGTERM; SIGKILL would leave it running.
  kill -TERM $job 2>/dev/null || true
  timeout "$grace" tail --pid=$job -s 0.1 -f /dev/null || kill -KILL $job 2>/dev/null || true
fi
took=$(elapsed "$t0")
status=0
wait $job || status=$?
echo "hvdrun ended with status $status ${took} s after the cut"
over "$took" "$bound" && fail "hvdrun did not end within ${bound} s of the cut (HVD_FINALIZE_TIMEOUT_SECONDS=$finalize_timeout)"

echo "--- the job's lines"
grep -E 'finalize_worker|libhvd|hvdrun' "$NETLAB_DIR/job.err" || true
# The cut node's own lines cannot cross its links; its peers' must come.
for rank in 0 2; do
  grep -q "finalize_worker rank $rank: finalizing" "$NETLAB_DIR/job.err" ||
    fail "rank $rank did not say it went on to MPI_Finalize"
done
# The cut node cannot finish MPI_Finalize: its peers, or itself, say they gave up.
gave_up=$(grep 'libhvd: rank [0-9]*: gave up waiting for MPI_Finalize' "$NETLAB_DIR/job.err" |
  grep -c 'HVD_FINALIZE_TIMEOUT_SECONDS' || true)
[ "$gave_up" -ge 1 ] || fail "no rank said it gave up waiting for MPI_Finalize (HVD_FINALIZE_TIMEOUT_SECONDS)"
last=$(tail -n 1 "$NETLAB_DIR/job.err")
echo "hvdrun's last line: $last"
case $last in
  hvdrun:*) ;;
  *) fail "hvdrun's last line does not say how the job ended" ;;
esac
if [ "$status" = 0 ]; then
  # Every rank exited 0 (its work was done): hvdrun says so despite the lost node.
  case $last in *"$cut"*) ;; *) fail "hvdrun exited 0 without naming the cut node $cut" ;; esac
else
  case $last in *"$cut"*|*"status $status"*) ;; *) fail "hvdrun's last line names neither node $cut nor status $status" ;; esac
fi

waited=0
while [ -n "$("$netlab" pids "$NETLAB_DIR")" ] || pgrep -f -- "$go_pipe" > /dev/null; do
  [ $waited -lt $((grace * 10)) ] || {
    { "$netlab" pids "$NETLAB_DIR"; pgrep -f -- "$go_pipe"; } | xargs -r ps -o pid,args -p >&2
    fail "processes of the job left ${grace} s after hvdrun ended"
  }
  sleep 0.1; waited=$((waited + 1))
done
echo "no process of the job left"
