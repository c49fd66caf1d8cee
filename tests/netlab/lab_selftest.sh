#!/bin/sh
# The lab itself: nodes with hostnames of their own, routes to the lab's subnets only,
# two labs side by side with different names and subnets, link rate and link state,
# the command's status passed on, and nothing left behind, after a normal end and after
# a SIGTERM in the middle of a run.
#   lab_selftest.sh NETLAB
set -eu
netlab=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# How long a lab may take to come up, scaled for slow machines (scripts/run-tests.sh).
up_bound=$((60 * ${HVD_TEST_TIMEOUT_MULTIPLIER:-1}))

if [ -z "${NETLAB_DIR:-}" ]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/netlab-selftest.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  status=0
  "$netlab" run -n 3 -r 1gbit -- "$0" "$@" > "$scratch/inside.log" 2>&1 || status=$?
  cat "$scratch/inside.log"
  [ $status = 0 ] || exit $status
  id=$(sed -n 's/^lab id //p' "$scratch/inside.log")
  [ -n "$id" ] || fail "the lab did not report its id"

  # Nothing left behind by a normal end.
  ! ip netns list | grep -q "^nl$id-" || fail "namespaces of lab $id left: $(ip netns list)"
  ! ip -o link show | grep -q "nl$id" || fail "links of lab $id left"
  dir=$(sed -n 's/^lab dir //p' "$scratch/inside.log")
  [ ! -e "$dir" ] || fail "run directory $dir left"

  # -c: each node's processes on CPUs of their own, together every CPU this test may use.
  "$netlab" run -n 2 -c -- sh -c 'for k in 0 1; do
      "$0" exec "$NETLAB_DIR" $k sh -c "sed -n \"s/^Cpus_allowed_list:[[:space:]]*//p\" /proc/self/status"
    done' "$netlab" > "$scratch/cpus" 2>/dev/null || fail "the run of a lab made with -c failed"
  all=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
  expand() { echo "$1" | tr ',' '\n' | while IFS=- read -r lo hi; do seq "$lo" "${hi:-$lo}"; done; }
  [ "$(wc -l < "$scratch/cpus")" = 2 ] || fail "-c: expected the CPUs of 2 nodes, got: $(cat "$scratch/cpus")"
  if [ "$(expand "$all" | wc -l)" -ge 2 ]; then
    a=$(sed -n 1p "$scratch/cpus") b=$(sed -n 2p "$scratch/cpus")
    [ -z "$( (expand "$a"; expand "$b") | sort | uniq -d)" ] || fail "-c: nodes share CPUs: $a and $b"
    for c in $(expand "$a") $(expand "$b"); do
      expand "$all" | grep -qx "$c" || fail "-c: node CPU $c is not one of this test's ($all)"
    done
  fi

  # The command's status comes back.
  s=0; "$netlab" run -n 1 -- sh -c 'exit 5' 2>/dev/null || s=$?
  [ $s = 5 ] || fail "netlab run returned $s for a command that exited 5"

  # A command that ends leaving a process behind (a launcher whose parent script died
  # is no longer a descendant of the command): the run's end takes it too.
  orphan=4$$
  "$netlab" run -n 1 -- sh -c '(trap "" TERM; exec sleep "$0") > /dev/null 2>&1 &' "$orphan" \
    > /dev/null 2>&1 || fail "the run with an orphan failed"
  ! pgrep -x -f "sleep $orphan" > /dev/null || fail "a process the command left behind outlived the lab"

  # A SIGTERM while a job runs on the nodes: the lab still comes down.
  mkfifo "$scratch/up"
  # Sleeps of these many seconds: the test's process on a node, and one beside the
  # lab that ignores SIGTERM (as Hydra's mpiexec may once its proxies are gone).
  marker=1$$ deaf=3$$
  "$netlab" run -n 2 -d "$scratch/lab" -- sh -c \
    '(trap "" TERM; exec sleep $3) & "$0" exec "$NETLAB_DIR" 1 sh -c "echo up > $1; exec sleep $2"' \
    "$netlab" "$scratch/up" "$marker" "$deaf" > /dev/null 2>&1 &
  run=$!
  timeout "$up_bound" head -n 1 "$scratch/up" > /dev/null || fail "the lab did not come up"
  id=$(sed -n 's/^NETLAB_ID=//p' "$scratch/lab/lab.env")
  kill -TERM $run
  s=0; wait $run || s=$?
  [ $s = 143 ] || fail "netlab run returned $s after SIGTERM, expected 143"
  ! ip netns list | grep -q "^nl$id-" || fail "namespaces left after SIGTERM"
  ! ip -o link show | grep -q "nl$id" || fail "links left after SIGTERM"
  [ ! -e "$scratch/lab/lab.env" ] || fail "lab state left after SIGTERM"
  ! pgrep -x -f "sleep $marker" >/dev/null || fail "the node's process survived SIGTERM"
  ! pgrep -x -f "sleep $deaf" >/dev/null || fail "the command's process that ignores SIGTERM survived"

  # The run killed outright (SIGKILL, no trap runs): its reaper removes the lab.
  mkfifo "$scratch/up2"
  marker2=2$$
  "$netlab" run -n 1 -d "$scratch/lab2" -- sh -c 'echo up > "$0"; exec sleep "$1"' "$scratch/up2" "$marker2" \
    > /dev/null 2>&1 &
  run=$!
  timeout "$up_bound" head -n 1 "$scratch/up2" > /dev/null || fail "the second lab did not come up"
  id=$(sed -n 's/^NETLAB_ID=//p' "$scratch/lab2/lab.env")
  kill -KILL $run
  wait $run || true
  # The reaper runs in a session of its own; give it a bounded time.
  tries=0
  while [ -e "$scratch/lab2/lab.env" ] && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
  [ ! -e "$scratch/lab2/lab.env" ] || fail "lab $id left after its run was killed with SIGKILL"
  ! ip netns list | grep -q "^nl$id-" || fail "namespaces of lab $id left after SIGKILL"
  ! pgrep -x -f "sleep $marker2" > /dev/null || fail "the command of a run killed with SIGKILL survived"

  # Not root: skipped, not failed.
  if command -v setpriv >/dev/null 2>&1; then
    s=0; setpriv --reuid=65534 --regid=65534 --clear-groups "$netlab" up "$scratch/x" 2>/dev/null || s=$?
    [ $s = 77 ] || fail "netlab up as an unprivileged user returned $s, expected 77 (skip)"
  fi
  echo "lab self-test passed"
  exit 0
fi

# Inside a 3-node lab at 1 Gbit/s.
. "$NETLAB_DIR/lab.env"
echo "lab id $NETLAB_ID"
echo "lab dir $NETLAB_DIR"
nodes=$("$netlab" nodes "$NETLAB_DIR")
[ "$(echo "$nodes" | wc -l)" = 3 ] || fail "expected 3 nodes, got: $nodes"
names=
for k in 0 1 2; do
  name=$("$netlab" exec "$NETLAB_DIR" $k hostname)
  [ "$name" = "$(echo "$nodes" | sed -n "$((k + 1))p")" ] || fail "node $k calls itself '$name'"
  names="$names $name"
  routes=$("$netlab" exec "$NETLAB_DIR" $k ip -4 route show)
  echo "$routes" | grep -q default && fail "node $k has a default route: $routes"
  echo "$routes" | grep -v -e "^$NETLAB_DATA_NET\.0/24 " -e "^$NETLAB_CTL_NET\.0/24 " | grep -q . &&
    fail "node $k routes beyond the lab: $routes"
  "$netlab" exec "$NETLAB_DIR" $k tc qdisc show dev eth0 | grep -q 'tbf.*rate 1Gbit' ||
    fail "node $k's link is not shaped to 1 Gbit/s"
done
echo "nodes:$names"

# A second lab beside this one: other names, other subnets.
"$netlab" run -n 1 -- sh -c '. "$NETLAB_DIR/lab.env"; echo "$NETLAB_ID $NETLAB_DATA_NET $NETLAB_CTL_NET"' \
  > "$NETLAB_DIR/other" 2>/dev/null
read -r id2 data2 ctl2 < "$NETLAB_DIR/other"
[ "$id2" != "$NETLAB_ID" ] || fail "two labs share the id $id2"
for net in $data2 $ctl2; do
  [ "$net" != "$NETLAB_DATA_NET" ] && [ "$net" != "$NETLAB_CTL_NET" ] || fail "two labs share subnet $net"
done

# Rate and link state.
"$netlab" rate "$NETLAB_DIR" 1 unlimited
! "$netlab" exec "$NETLAB_DIR" 1 tc qdisc show dev eth0 | grep -q tbf || fail "rate unlimited left a tbf"
"$netlab" link-down "$NETLAB_DIR" 2
"$netlab" exec "$NETLAB_DIR" 2 ip link show eth0 | grep -q NO-CARRIER || fail "link-down left node 2's link up"
"$netlab" link-up "$NETLAB_DIR" 2
! "$netlab" exec "$NETLAB_DIR" 2 ip link show eth0 | grep -q NO-CARRIER || fail "link-up did not restore node 2"

# An MPI job across the nodes: one rank per node, each on its own host. In a sanitized
# build the ranks get the sanitizer's runtime preloaded (netlab.sh: the finalize guard
# is instrumented), and hostname(1) does not free what it allocates: no leak check.
"$netlab" mpiexec "$NETLAB_DIR" 1 -n 3 env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  hostname | sort > "$NETLAB_DIR/ran"
echo "$nodes" | sort | diff - "$NETLAB_DIR/ran" || fail "the job's ranks did not run one per node"
