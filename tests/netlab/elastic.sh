#!/bin/sh
# An elastic job through hvdrun on three lab nodes of one slot each, --min-np 2: once
# generation 0 runs, every process of node 1 is killed. hvdrun names the lost host,
# leaves it out, and generation 1 runs on the two others and finishes the job.
#   HVDRUN=path elastic.sh NETLAB WORKER      (WORKER: tests/tools/elastic_worker.c)
# The discovery script keeps printing node 1 (its namespace still runs processes):
# only the blacklist keeps generation 1 off it. Passes when hvdrun exits 0 with those
# lines, both ranks of generation 1 ran on the surviving nodes, and no process is left.
set -eu

netlab=$1 worker=$2
m=${HVD_TEST_TIMEOUT_MULTIPLIER:-1}
start_bound=$((120 * m))  # for generation 0 to reach its allreduces
end_bound=$((120 * m))    # for the job to end after the loss
grace=$((10 * m))

if [ -z "${NETLAB_DIR:-}" ]; then
  exec "$netlab" run -n 3 -- "$0" "$@"
fi
. "$NETLAB_DIR/lab.env"

fail() {
  echo "FAIL: $*" >&2
  echo "--- hvdrun's stderr" >&2; cat "$NETLAB_DIR/job.err" >&2 || true
  echo "--- the workers' log" >&2; cat "$NETLAB_DIR/log" >&2 || true
  exit 1
}

n0=$("$netlab" nodes "$NETLAB_DIR" | sed -n 1p)
n1=$("$netlab" nodes "$NETLAB_DIR" | sed -n 2p)
n2=$("$netlab" nodes "$NETLAB_DIR" | sed -n 3p)
printf '%s:1\n%s:1\n%s:1\n' "$n0" "$n1" "$n2" > "$NETLAB_DIR/hosts"
printf '#!/bin/sh\ncat %s\n' "$NETLAB_DIR/hosts" > "$NETLAB_DIR/discover.sh"
chmod +x "$NETLAB_DIR/discover.sh"
mkfifo "$NETLAB_DIR/ready"

# The nodes reach hvdrun's listener over the control network, at the bridge's address.
HVDRUN_ELASTIC_ADDRESS=$NETLAB_CTL_NET.1 \
  "$netlab" hvdrun "$NETLAB_DIR" - -np 3 --min-np 2 --elastic-timeout 60 \
  --host-discovery-script "$NETLAB_DIR/discover.sh" \
  "$worker" "$NETLAB_DIR/log" loop "$NETLAB_DIR/ready" \
  > "$NETLAB_DIR/job.out" 2> "$NETLAB_DIR/job.err" &
job=$!

if ! timeout "$start_bound" head -n 1 "$NETLAB_DIR/ready" > /dev/null; then
  kill -KILL $job 2>/dev/null || true
  fail "generation 0 did not reach its allreduces within ${start_bound} s"
fi
"$netlab" kill "$NETLAB_DIR" 1
echo "every process of $n1 killed at $(date -u +%T.%N)"

timeout "$end_bound" tail --pid=$job -s 0.1 -f /dev/null || kill -KILL $job 2>/dev/null || true
status=0
wait $job || status=$?
echo "hvdrun ended with status $status"
grep '^hvdrun: elastic:' "$NETLAB_DIR/job.err" || true

[ "$status" = 0 ] || fail "hvdrun exited $status, expected 0"
grep -qF "hvdrun: elastic: generation 0 on 3 hosts ($n0:1, $n1:1, $n2:1), 3 ranks" "$NETLAB_DIR/job.err" ||
  fail "no line for generation 0 on the three nodes"
grep -qF "hvdrun: elastic: generation 0 failed: host $n1 was lost (rank 1); host $n1 is left out for the rest of the job" \
  "$NETLAB_DIR/job.err" || fail "generation 0's end does not name the lost $n1"
grep -qF "hvdrun: elastic: generation 1 on 2 hosts ($n0:1, $n2:1), 2 ranks, after host $n1 was lost (rank 1)" \
  "$NETLAB_DIR/job.err" || fail "no line for generation 1 on $n0 and $n2"
grep -qF "hvdrun: elastic: generation 1 finished: every rank returned 0; the job is done" \
  "$NETLAB_DIR/job.err" || fail "generation 1 did not finish the job"
grep -qxF "gen=1 rank=0 size=2 host=$n0" "$NETLAB_DIR/log" || fail "no rank 0 of generation 1 on $n0"
grep -qxF "gen=1 rank=1 size=2 host=$n2" "$NETLAB_DIR/log" || fail "no rank 1 of generation 1 on $n2"

waited=0
while [ -n "$("$netlab" pids "$NETLAB_DIR")" ]; do
  [ $waited -lt $((grace * 10)) ] || {
    "$netlab" pids "$NETLAB_DIR" | xargs -r ps -o pid,args -p >&2
    fail "processes left on the nodes ${grace} s after the job ended"
  }
  sleep 0.1; waited=$((waited + 1))
done
echo "no process left on any node"
