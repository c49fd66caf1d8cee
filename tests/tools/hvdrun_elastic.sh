#!/bin/sh
# hvdrun as the driver of elastic jobs, with real MPI jobs of elastic_worker (a worker
# that behaves as docs/elastic.md says) on this machine:
#   hvdrun_elastic.sh CASE HVDRUN WORKER
#   grow           discovery grows localhost:2 to localhost:3: rank 0 is told
#                  HOSTS_UPDATED, the ranks leave with 75, generation 1 runs 3 ranks
#                  (with --verbose, which must not show the token)
#   fail-single    a rank fails on the only host: it is left out, and the job ends
#                  after --elastic-timeout naming the slots and hosts seen
#   cooldown       the same with --blacklist-cooldown-range: the host comes back and
#                  generation 1 finishes the job
#   reset-limit    a rank fails in every generation: the second failure is more than
#                  --reset-limit 1 allows
#   state-hosts-gone  the only host of generation 0 fails and another is free: no
#                  generation starts without a host holding the committed state
#   signal         SIGTERM to hvdrun while generation 0 runs ends it and the job (143);
#                  no generation follows
#   launcher-hangs a launcher that stays after its ranks all returned 0 is ended and
#                  the job is done (WORKER: the stand-in launcher)
#   discovery-fails  a discovery script failing on its first run ends the job (2); one
#                  failing later is a warning (once) and its last list stays
#   unresolvable-host  a discovered host whose name does not resolve is left out with
#                  a warning; the job runs on localhost
set -u
case_name=$1 hvdrun=$2 worker=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
die() {
  echo "FAIL [$case_name]: $*" >&2
  echo "--- hvdrun's stderr" >&2; cat "$work/err" >&2 2>/dev/null
  echo "--- the workers' log" >&2; cat "$work/log" >&2 2>/dev/null
  exit 1
}
has() { grep -qF -- "$1" "$work/err" || die "stderr lacks [$1]"; }
logged() { grep -qxF -- "$1" "$work/log" || die "the log lacks [$1]"; }

# The discovery script prints the hosts file, which the test (or a worker) rewrites.
printf '#!/bin/sh\ncat %s\n' "$work/hosts" > "$work/discover.sh"
chmod +x "$work/discover.sh"
echo localhost:2 > "$work/hosts"
run() {
  "$hvdrun" "$@" > "$work/out" 2> "$work/err"
  status=$?
}

case $case_name in
grow)
  run --verbose -np 2 --max-np 3 --host-discovery-script "$work/discover.sh" \
    "$worker" "$work/log" grow 3 "$work/hosts" localhost:3
  [ "$status" = 0 ] || die "status $status, expected 0"
  has "hvdrun: elastic: generation 0 on 1 host (localhost:2), 2 ranks"
  has "hvdrun: elastic: generation 0 ended: its ranks left for a change of hosts (status 75)"
  has "hvdrun: elastic: generation 1 on 1 host (localhost:3), 3 ranks, after a change of hosts"
  has "hvdrun: elastic: generation 1 finished: every rank returned 0; the job is done"
  # HOSTS_UPDATED with Horovod's "added" (2), to the rank 0 that said HELLO.
  grep -qE '^notified gen=0: HOSTS_UPDATED [0-9]+\.[0-9]+ 2$' "$work/log" || die "no HOSTS_UPDATED 2 in the log"
  for r in 0 1; do logged "gen=0 rank=$r size=2 host=localhost"; done
  for r in 0 1 2; do logged "gen=1 rank=$r size=3 host=localhost"; done
  # --verbose shows the launcher's command lines, never the job's token.
  grep -q "HVD_ELASTIC_TOKEN[= ][0-9a-f]" "$work/err" && die "--verbose printed the token"
  ;;
fail-single)
  run -np 2 --elastic-timeout 3 --host-discovery-script "$work/discover.sh" \
    "$worker" "$work/log" fail 0 1
  [ "$status" = 1 ] || die "status $status, expected 1"
  has "hvdrun: elastic: generation 0 failed: rank 1"
  has "exited with status 1; host localhost is left out for the rest of the job"
  has "hvdrun: elastic: the job ends: it needs 2 slots (--min-np) and had fewer for 3 s (--elastic-timeout): have 0 slots; left out after failures: localhost"
  grep -q "generation 1 on" "$work/err" && die "a generation started without slots"
  ;;
cooldown)
  run -np 2 --blacklist-cooldown-range 1 2 --host-discovery-script "$work/discover.sh" \
    "$worker" "$work/log" fail 0 1
  [ "$status" = 0 ] || die "status $status, expected 0"
  has "host localhost is left out for "
  has "hvdrun: elastic: generation 1 on 1 host (localhost:2), 2 ranks, after host localhost failed (rank 1 exited with status 1)"
  has "hvdrun: elastic: generation 1 finished"
  for r in 0 1; do logged "gen=1 rank=$r size=2 host=localhost"; done
  ;;
reset-limit)
  run -np 2 --reset-limit 1 --blacklist-cooldown-range 1 1 --host-discovery-script "$work/discover.sh" \
    "$worker" "$work/log" fail -1 0
  [ "$status" = 1 ] || die "status $status, expected 1 (the failed rank's)"
  has "hvdrun: elastic: generation 1 failed: rank 0"
  has "hvdrun: elastic: the job ends: 2 failures, more than --reset-limit 1 restarts allow"
  grep -q "generation 2 on" "$work/err" && die "a generation started past --reset-limit"
  ;;
state-hosts-gone)
  printf 'localhost:2\n127.0.0.1:2\n' > "$work/hosts"
  run -np 2 --max-np 2 --elastic-timeout 3 --host-discovery-script "$work/discover.sh" \
    "$worker" "$work/log" fail 0 1
  [ "$status" = 1 ] || die "status $status, expected 1"
  has "hvdrun: elastic: generation 0 on 1 host (localhost:2), 2 ranks"
  has "hvdrun: elastic: the job ends: it needs one of the last generation's hosts (localhost:2), which hold the committed state, and had none for 3 s (--elastic-timeout): have 2 slots (127.0.0.1:2); left out after failures: localhost"
  grep -q "generation 1 on" "$work/err" && die "a generation started on hosts without the state"
  ;;
signal)
  mkfifo "$work/ready"
  "$hvdrun" -np 2 --host-discovery-script "$work/discover.sh" \
    "$worker" "$work/log" loop "$work/ready" > "$work/out" 2> "$work/err" &
  job=$!
  timeout 120 head -n 1 "$work/ready" > /dev/null || { kill -KILL $job; die "generation 0 did not start"; }
  kill -TERM $job
  status=0
  wait $job || status=$?
  [ "$status" = 143 ] || die "status $status, expected 143"
  has "hvdrun: elastic: generation 0 was stopped by Terminated; the job ends"
  grep -q "generation 1 on" "$work/err" && die "a generation started after SIGTERM"
  ;;
launcher-hangs)
  HVDRUN_MPIEXEC=$worker run -np 2 --host-discovery-script "$work/discover.sh" /bin/true
  [ "$status" = 0 ] || die "status $status, expected 0"
  has "hvdrun: every rank ended but the launcher did not within 10 s; ending it"
  has "hvdrun: elastic: generation 0 finished: every rank returned 0; the job is done"
  ;;
discovery-fails)
  printf '#!/bin/sh\nexit 4\n' > "$work/broken.sh"
  chmod +x "$work/broken.sh"
  run -np 2 --host-discovery-script "$work/broken.sh" "$worker" "$work/log" fail 5 0
  [ "$status" = 2 ] || die "status $status, expected 2"
  has "the host discovery script '$work/broken.sh' exited with status 4 on its first run"
  [ ! -e "$work/log" ] || die "a worker ran"
  # Later failures keep the last list: this script works once only. The host left out
  # after generation 0's failure comes back from that list.
  printf '#!/bin/sh\n[ -e %s ] && exit 5\ntouch %s\necho localhost:2\n' "$work/ran" "$work/ran" > "$work/once.sh"
  chmod +x "$work/once.sh"
  run -np 2 --elastic-timeout 60 --blacklist-cooldown-range 1 2 --host-discovery-script "$work/once.sh" \
    "$worker" "$work/log" fail 0 1
  [ "$status" = 0 ] || die "status $status, expected 0"
  has "hvdrun: elastic: generation 1 on 1 host (localhost:2), 2 ranks"
  # Said once, not at every run of the script.
  [ "$(grep -c 'warning: elastic: the host discovery script exited with status 5' "$work/err")" -le 1 ] ||
    die "the script's failure was reported more than once"
  ;;
unresolvable-host)
  # A host gone from DNS, as a reclaimed spot machine's name: left out with a
  # warning, and the job runs on the others (status 2 before, as for a mistyped -H).
  printf 'no-such-host.invalid:2\nlocalhost:2\n' > "$work/hosts"
  run -np 2 --max-np 4 --host-discovery-script "$work/discover.sh" \
    "$worker" "$work/log" fail 5 0
  [ "$status" = 0 ] || die "status $status, expected 0"
  has "hvdrun: warning: elastic: host no-such-host.invalid from the discovery script does not resolve ("
  has "); it is left out for the rest of the job"
  has "hvdrun: elastic: generation 0 on 1 host (localhost:2), 2 ranks"
  has "hvdrun: elastic: generation 0 finished: every rank returned 0; the job is done"
  for r in 0 1; do logged "gen=0 rank=$r size=2 host=localhost"; done
  ;;
*) die "unknown case" ;;
esac
# The state folder is gone.
ls -d /dev/shm/hvd-elastic-"$(id -u)"-* 2>/dev/null && die "a state folder was left in /dev/shm"
echo "PASS [$case_name]"
