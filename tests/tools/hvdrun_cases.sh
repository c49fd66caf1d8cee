#!/bin/sh
# End-to-end checks of the hvdrun binary, one case per run:
#   hvdrun_cases.sh CASE HVDRUN FAKE_DIR [PROGRAM]
# PROGRAM is the libhvd job a case runs: hvdrun_probe, or train_linear for
# scaling-train-linear.
# Cases that need MPI start real jobs through the MPI libhvd was built for; the others use the
# fake launchers in FAKE_DIR (HVDRUN_MPIEXEC) and never start a rank.
set -u
case_name=$1 hvdrun=$2 fakes=$3 probe=${4:-}
work=$(mktemp -d /tmp/hvdrun_case.XXXXXX)
trap 'rm -rf "$work"' EXIT

# A job's bound, scaled for slow machines (scripts/run-tests.sh).
job_bound=$((60 * ${HVD_TEST_TIMEOUT_MULTIPLIER:-1}))

die() { echo "FAIL ($case_name): $*" >&2; exit 1; }

# What hvdrun puts in front of the command on the launcher's command line: the rank
# monitor, this hvdrun by its full path. --dry-run and --verbose print it too.
self=$(readlink -f "$hvdrun")
monitor="$self --rank-monitor --"

# expect_output EXPECTED_STATUS EXPECTED_STDOUT -- command...: exact stdout and status.
expect_output() {
  want_status=$1 want_out=$2
  shift 3
  out=$("$@" 2>"$work/stderr")
  status=$?
  [ "$status" = "$want_status" ] || die "status $status, expected $want_status: $* (stderr: $(cat "$work/stderr"))"
  [ "$out" = "$want_out" ] || die "stdout of $*:
got:      $out
expected: $want_out"
}

# expect_error MESSAGE -- command...: status 2 and MESSAGE in stderr.
expect_error() {
  want=$1
  shift 2
  "$@" >"$work/stdout" 2>"$work/stderr"
  status=$?
  [ "$status" = 2 ] || die "status $status, expected 2: $*"
  grep -qF -- "$want" "$work/stderr" || die "stderr of $* lacks [$want]: $(cat "$work/stderr")"
}

case "$case_name" in
dry-run-mpich)
  export HVDRUN_MPIEXEC="$fakes/fake_mpich"
  expect_output 0 "$fakes/fake_mpich -n 2 -hosts localhost:2 -prepend-rank $monitor python train.py --lr 0.1" -- \
    "$hvdrun" --dry-run -np 2 -H localhost:2 python train.py --lr 0.1
  expect_output 0 "$fakes/fake_mpich -n 4 -hosts nodeA:2,nodeB:2 -prepend-rank -genv HOROVOD_FUSION_THRESHOLD 33554432 -genv HOROVOD_CYCLE_TIME 0.5 -genv HOROVOD_HIERARCHICAL_ALLREDUCE 1 -genv FOO 'a b' -launcher fork $monitor ./train 'it'\\''s here'" -- \
    "$hvdrun" --dry-run -np 4 -H nodeA:2,nodeB:2 --fusion-threshold-mb 32 --cycle-time-ms 0.5 \
    --hierarchical-allreduce -x "FOO=a b" --mpi-args "-launcher fork" ./train "it's here"
  ;;
dry-run-openmpi)
  export HVDRUN_MPIEXEC="$fakes/fake_openmpi"
  root=""
  [ "$(id -u)" = 0 ] && root=" --allow-run-as-root"
  # A known environment: PATH, and one libhvd knob that remote ranks must see too.
  expect_output 0 "$fakes/fake_openmpi$root -np 4 -H h1:2,h2:2 --bind-to none --map-by slot --tag-output -x HOROVOD_CACHE_CAPACITY=0 -x PATH -x HVD_LIBRARY $monitor python train.py" -- \
    env -i PATH="$PATH" HVDRUN_MPIEXEC="$HVDRUN_MPIEXEC" HVD_LIBRARY=/opt/libhvd.so.0 \
    "$hvdrun" --dry-run -np 4 -H h1:2,h2:2 --cache-capacity 0 python train.py
  ;;
dry-run-intel)
  export HVDRUN_MPIEXEC="$fakes/fake_intel"
  expect_output 0 "$fakes/fake_intel -n 4 -hosts h1,h2 -ppn 2 -prepend-rank -genv HOROVOD_TIMELINE /tmp/t.json $monitor python train.py" -- \
    "$hvdrun" --dry-run -np 4 -H h1:2,h2:2 --timeline-filename /tmp/t.json python train.py
  ;;
unknown-mpi)
  HVDRUN_MPIEXEC="$fakes/fake_unknown" "$hvdrun" -np 1 true >/dev/null 2>"$work/stderr"
  [ $? = 127 ] || die "expected status 127 for an unknown MPI"
  grep -qF "does not name MPICH, Open MPI or Intel MPI" "$work/stderr" || die "$(cat "$work/stderr")"
  HVDRUN_MPIEXEC=/no/such/launcher "$hvdrun" -np 1 true >/dev/null 2>"$work/stderr"
  [ $? = 127 ] || die "expected status 127 for a missing launcher"
  grep -qF "cannot run '/no/such/launcher'" "$work/stderr" || die "$(cat "$work/stderr")"
  ;;
usage-errors)
  export HVDRUN_MPIEXEC="$fakes/fake_mpich"
  expect_error "-np 0: the number of processes must be at least 1" -- "$hvdrun" -np 0 prog
  expect_error "-np 5 is more than the 4 slots of -H a:2,b:2" -- "$hvdrun" -np 5 -H a:2,b:2 prog
  expect_error "host name 'a/b' contains '/'" -- "$hvdrun" -np 1 -H a/b:1 prog
  expect_error "slots must be a positive whole number" -- "$hvdrun" -np 1 -H a:two prog
  expect_error "--hostfile $work/none: cannot read it" -- "$hvdrun" -np 1 --hostfile "$work/none" prog
  expect_error "no command to run" -- "$hvdrun" -np 2
  expect_error "unknown option '--no-such-option': hvdrun does not know it" -- \
    "$hvdrun" -np 2 --no-such-option prog
  expect_error "-np/--num-proc expects a whole number of ranks, got 'abc'" -- "$hvdrun" -np abc prog
  expect_error "--min-np is an elastic training option: add --host-discovery-script" -- \
    "$hvdrun" -np 2 --min-np 1 prog
  expect_error "-H and --host-discovery-script" -- \
    "$hvdrun" -np 2 -H a:2 --host-discovery-script ./d.sh prog
  printf 'params:\n  cycle_time_ms: soon\n' >"$work/bad.yaml"
  expect_error "--config-file $work/bad.yaml, line 2: params.cycle_time_ms: expects a number, got 'soon'" -- \
    "$hvdrun" -np 2 --config-file "$work/bad.yaml" prog
  printf 'a slots=1\nb slots=oops\n' >"$work/hosts"
  expect_error "line 2, host 'b': slots must be a positive whole number" -- \
    "$hvdrun" -np 1 --hostfile "$work/hosts" prog
  ;;
help)
  "$hvdrun" --help >"$work/help" || die "--help failed"
  for part in SYNOPSIS "-np, --num-proc N" "--fusion-threshold-mb MB" "EXIT STATUS" EXAMPLES \
      "the launcher of the MPI" "REFUSED HOROVODRUN FLAGS" "response cache" \
      "--host-discovery-script SCRIPT" "--min-np, --min-num-proc N" \
      "--blacklist-cooldown-range MIN MAX"; do
    grep -qF -- "$part" "$work/help" || die "--help lacks $part"
  done
  # Every flag hvdrun refuses is in the manual, which takes them from the same list.
  for flag in --gloo --jsrun; do
    grep -qE -- "(^| )$flag[,:]" "$work/help" || die "--help does not list the refused $flag"
    HVDRUN_MPIEXEC="$fakes/fake_mpich" "$hvdrun" -np 1 "$flag" x prog >/dev/null 2>"$work/refused"
    status=$?
    [ "$status" = 2 ] || die "$flag: status $status, expected 2"
  done
  "$hvdrun" --version | grep -q "^hvdrun [0-9]" || die "--version"
  "$hvdrun" --check-build >"$work/cb" || die "--check-build failed"
  grep -qF "[X] MPI" "$work/cb" || die "--check-build: $(cat "$work/cb")"
  grep -qE "\[(X| )\] NCCL" "$work/cb" || die "--check-build lacks NCCL"
  grep -qE "\[(X| )\] hwloc" "$work/cb" || die "--check-build lacks hwloc"
  ;;
arguments-intact)
  # No shell between hvdrun and the launcher: every word arrives as it was given.
  # Each rank runs under hvdrun's own rank monitor (the same binary, by its full path).
  HVDRUN_MPIEXEC="$fakes/fake_mpich" "$hvdrun" --verbose -np 1 ./prog "a b" "it's \"quoted\"" ";" '$HOME' '*' "" \
    >"$work/out" 2>"$work/err" || die "hvdrun failed"
  # --verbose prints the command that runs, rank monitor included.
  grep -qxF "hvdrun: MPICH: $fakes/fake_mpich -n 1 -prepend-rank $monitor ./prog 'a b' 'it'\\''s \"quoted\"' ';' '\$HOME' '*' ''" \
    "$work/err" || die "--verbose printed: $(cat "$work/err")"
  printf '%s\n' "--- launcher arguments" -n 1 -prepend-rank "$self" --rank-monitor -- ./prog "a b" "it's \"quoted\"" \
    ";" '$HOME' '*' "" "--- end" >"$work/want"
  cmp -s "$work/out" "$work/want" || die "launcher got: $(cat "$work/out")"
  ;;
unresolvable-host)
  # A mistyped host is refused before anything is launched, naming it.
  HVDRUN_MPIEXEC="$fakes/fake_mpich" "$hvdrun" -np 2 -H localhost:1,no-such-host.invalid:1 prog \
    >"$work/out" 2>"$work/err"
  status=$?
  [ "$status" = 2 ] || die "status $status, expected 2: $(cat "$work/err")"
  grep -q "cannot resolve host 'no-such-host.invalid'" "$work/err" || die "message: $(cat "$work/err")"
  ! grep -q "launcher arguments" "$work/out" || die "the launcher was started"
  ;;
config-file)
  # Horovod's YAML file: its settings reach the ranks' environment, a flag on the
  # command line wins, and a key without effect here gets its flag's note.
  export HVDRUN_MPIEXEC="$fakes/fake_mpich"
  printf '%s\n' 'params:' '  fusion_threshold_mb: 32' '  cycle_time_ms: 5' \
    'stall_check:' '  enabled: false' 'library_options:' '  num_nccl_streams: 2' >"$work/cfg.yaml"
  expect_output 0 "$fakes/fake_mpich -n 2 -prepend-rank -genv HOROVOD_FUSION_THRESHOLD 33554432 -genv HOROVOD_CYCLE_TIME 0.5 -genv HOROVOD_STALL_CHECK_DISABLE 1 $monitor prog" -- \
    "$hvdrun" --dry-run -np 2 --config-file "$work/cfg.yaml" --cycle-time-ms 0.5 prog
  grep -qF "hvdrun: note: library_options.num_nccl_streams (--config-file $work/cfg.yaml, line 7) has no effect" \
    "$work/stderr" || die "no note: $(cat "$work/stderr")"
  ;;
bad-interface)
  # A --network-interface this machine lacks is refused before launch, naming it and
  # the interfaces there are (Hydra would stop with its internals and status 255).
  export HVDRUN_MPIEXEC="$fakes/fake_mpich"
  expect_error "--network-interface: this machine has no network interface 'bogus0'; its interfaces are " -- \
    "$hvdrun" -np 2 -H localhost:2 --network-interface bogus0 prog
  grep -qE "its interfaces are .*\blo\b" "$work/stderr" || die "lo not named: $(cat "$work/stderr")"
  ! grep -q "launcher arguments" "$work/stdout" || die "the launcher was started"
  expect_error "no network interface 'bogus0'" -- "$hvdrun" -np 2 --network-interface lo,bogus0 prog
  # One that exists runs.
  "$hvdrun" -np 1 --network-interface lo prog >"$work/stdout" 2>"$work/stderr" ||
    die "--network-interface lo: status $?: $(cat "$work/stderr")"
  grep -qx -- "-iface" "$work/stdout" || die "no -iface: $(cat "$work/stdout")"
  ;;
signal-forwarded)
  # SIGTERM to hvdrun reaches the launcher's process group; the launcher dies of it
  # and hvdrun reports 128+15.
  mkfifo "$work/ready"
  FAKE_MPI_READY="$work/ready" HVDRUN_MPIEXEC="$fakes/fake_mpich" "$hvdrun" -np 1 prog &
  pid=$!
  read -r line <"$work/ready"
  kill -TERM "$pid"
  wait "$pid"
  status=$?
  [ "$status" = 143 ] || die "status $status after SIGTERM, expected 143"
  ;;
signal-deaf-launcher)
  # A launcher that outlives a signal hvdrun passed on (it ignores it, or hangs in its
  # own shutdown) is killed with its process group after hvdrun's grace (10 s), and
  # hvdrun still exits as a shell reports the signal; no rank is left.
  mkfifo "$work/ready"
  FAKE_MPI_READY="$work/ready" FAKE_MPI_DEAF=303 HVDRUN_MPIEXEC="$fakes/fake_mpich" \
    "$hvdrun" -np 1 prog >"$work/out" 2>"$work/err" &
  pid=$!
  read -r line <"$work/ready"
  kill -TERM "$pid"
  wait "$pid"
  status=$?
  [ "$status" = 143 ] || die "status $status after SIGTERM, expected 143: $(cat "$work/err")"
  grep -q "did not end within 10 s of Terminated passed on to it; killing it" "$work/err" ||
    die "message: $(cat "$work/err")"
  sleep 0.2
  ! pgrep -f "sleep 303" >/dev/null || die "the launcher's stand-in rank was left running"
  ;;
launcher-crash)
  # A launcher that dies of a signal nobody sent it leaves its ranks behind: hvdrun
  # names the fault, kills what is left in the launcher's process group and exits as
  # a shell reports the crash (128+11).
  FAKE_MPI_CRASH=302 HVDRUN_MPIEXEC="$fakes/fake_mpich" "$hvdrun" -np 1 prog >"$work/out" 2>"$work/err"
  status=$?
  [ "$status" = 139 ] || die "status $status after the launcher's crash, expected 139: $(cat "$work/err")"
  grep -q "fake_mpich itself died of signal 11" "$work/err" || die "message: $(cat "$work/err")"
  sleep 0.2
  ! pgrep -f "sleep 302" >/dev/null || die "the launcher's stand-in rank was left running"
  ;;
signal-real-job)
  # SIGINT, SIGTERM and SIGHUP to hvdrun stop a running job, and hvdrun exits as a
  # shell reports a program killed by the signal (128+N), whatever the launcher said
  # (Hydra: 0 or 2, Open MPI: 1); no rank is left. A non-interactive shell starts
  # background jobs with SIGINT ignored, and nohup ignores SIGHUP (hvdrun keeps an
  # ignored signal ignored, as a shell would): env restores all three.
  # Holding the FIFO open for writing lets both ranks' lines arrive.
  mkfifo "$work/ready"
  exec 3<>"$work/ready"
  for sig in INT:130 TERM:143 HUP:129; do
    name=${sig%:*} want=${sig#*:}
    env --default-signal=INT,TERM,HUP "$hvdrun" -np 2 sh -c "echo ready > '$work/ready'; exec sleep 301" \
      >"$work/out" 2>&1 &
    pid=$!
    read -r line <&3
    read -r line <&3
    kill -"$name" "$pid"
    wait "$pid"
    status=$?
    [ "$status" = "$want" ] || die "status $status after SIG$name, expected $want: $(cat "$work/out")"
    sleep 0.5
    ! pgrep -f "sleep 301" >/dev/null || die "a rank was left running after SIG$name"
  done
  ;;
exit-status)
  "$hvdrun" -np 2 -H localhost:2 "$probe" --exit-rank 1 3 >"$work/out" 2>&1
  status=$?
  [ "$status" = 3 ] || die "status $status, expected the failing rank's 3: $(cat "$work/out")"
  "$hvdrun" -np 2 sh -c 'exit 7' >/dev/null 2>&1
  status=$?
  [ "$status" = 7 ] || die "status $status, expected 7"
  ;;
early-exit)
  # A rank that returns before hvd_init leaves the others waiting in MPI_Init for
  # ever: with status 0 too, hvdrun ends the job at once (status 1), and so with
  # --output-filename, where the monitors report through files.
  start=$(date +%s)
  timeout "$job_bound" "$hvdrun" -np 2 "$probe" --early 1 0 >"$work/out" 2>&1
  status=$?
  [ "$status" = 1 ] || die "status $status, expected 1: $(cat "$work/out")"
  grep -qF "rank 1 (pid" "$work/out" && grep -qF "exited with status 0 without calling hvd_init" "$work/out" ||
    die "message: $(cat "$work/out")"
  timeout "$job_bound" "$hvdrun" -np 2 "$probe" --early 1 4 >"$work/out" 2>&1
  status=$?
  [ "$status" = 4 ] || die "status $status, expected 4: $(cat "$work/out")"
  timeout "$job_bound" "$hvdrun" -np 2 --output-filename "$work/od" "$probe" --early 1 4 >"$work/out" 2>&1
  status=$?
  [ "$status" = 4 ] || die "--output-filename: status $status, expected 4: $(cat "$work/out")"
  grep -qF "exited with status 4" "$work/out" || die "--output-filename: $(cat "$work/out")"
  ! grep -rqF "hvdrun:rank" "$work/od" || die "markers in the rank files: $(grep -rF hvdrun:rank "$work/od")"
  [ -z "$(ls -A "$work/od" | grep '^\.hvdrun')" ] || die "the events folder was left in $work/od"
  [ $(( $(date +%s) - start )) -lt 30 ] || die "took $(( $(date +%s) - start )) s"
  # Every rank of a libhvd program exits cleanly without hvd_init (a script's --help):
  # nobody waits, nothing failed.
  timeout "$job_bound" "$hvdrun" -np 2 "$probe" --early all 0 >"$work/out" 2>&1 ||
    die "every rank exiting before hvd_init: status $?: $(cat "$work/out")"
  # A program without MPI whose ranks end at different times is not cut short.
  "$hvdrun" -np 2 sh -c '[ "${PMI_RANK:-$OMPI_COMM_WORLD_RANK}" = 0 ] && sleep 1; echo done' \
    >"$work/out" 2>&1 || die "status $?: $(cat "$work/out")"
  [ "$(grep -c 'done$' "$work/out")" = 2 ] || die "a rank was cut short: $(cat "$work/out")"
  ;;
env-forwarded)
  HVDRUN_TEST_HERE="from here" "$hvdrun" -np 2 -x HVDRUN_TEST_HERE -x "HVDRUN_TEST_SET=x=1 y" \
    --log-level ERROR sh -c 'echo "[$HVDRUN_TEST_HERE][$HVDRUN_TEST_SET][$HOROVOD_LOG_LEVEL]"' \
    >"$work/out" || die "hvdrun failed"
  # Each line carries its rank, as with horovodrun (Hydra "[0] ", Open MPI "[1,0]<stdout>:").
  for r in 0 1; do
    grep -qE "^\[(1,)?$r\](<stdout>:| )\[from here\]\[x=1 y\]\[error\]$" "$work/out" ||
      die "rank $r should print the variables after its rank: $(cat "$work/out")"
  done
  "$hvdrun" -np 2 --no-rank-prefix sh -c 'echo plain' >"$work/out" || die "hvdrun failed"
  [ "$(grep -cx plain "$work/out")" = 2 ] || die "--no-rank-prefix: $(cat "$work/out")"
  ;;
whole-lines)
  # Each rank's output reaches the launcher a line at a time (rank_monitor.h), so
  # that its rank prefix starts every line and only lines: a line written in two
  # calls (Python's print with PYTHONUNBUFFERED or -u) came out as "[0] text[0] "
  # and a lone newline a few times in a hundred. With MPICH every line must be whole.
  # Open MPI's --tag-output still cuts some lines where its own forwarding splits a
  # read (it does so for single-write lines without hvdrun too), so there the lines
  # are counted, not checked one by one.
  py=/usr/bin/python3
  [ -x "$py" ] || py=python3
  cat >"$work/writer.py" <<'PY'
import os, sys
rank = int(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK"))
for i in range(200):
    for fd, what in ((1, "out"), (2, "err")):
        os.write(fd, f"{what} {i} of rank {rank}".encode())
        os.write(fd, b"\n")
os.write(2, b"unfinished")  # a last line with no newline; the exit marker follows it
sys.exit(int(sys.argv[1]) if rank == 1 else 0)
PY
  "$hvdrun" -np 2 -H localhost:2 "$py" "$work/writer.py" 0 >"$work/out" 2>"$work/err" ||
    die "status $?: $(tail -5 "$work/err")"
  for what in out err; do
    n=$(grep -cE "$what [0-9]+ of rank [01]\$" "$work/$what")
    if "$hvdrun" --dry-run -np 1 true | grep -q -- '-prepend-rank'; then
      bad=$(grep -vE "^\[[01]\] $what [0-9]+ of rank [01]\$|^\[[01]\] unfinished\$" "$work/$what")
      [ -z "$bad" ] || die "std$what lines not whole: $(echo "$bad" | head -5)"
      [ "$n" = 400 ] || die "std$what: $n whole lines of 400"
    else
      [ "$n" -ge 360 ] || die "std$what: $n whole lines of 400: $(head -5 "$work/$what")"
    fi
  done
  grep -q "unfinished" "$work/err" || die "the unfinished last line was lost: $(tail -3 "$work/err")"
  # A rank that fails right after such a line is still named (its marker starts a line).
  "$hvdrun" -np 2 -H localhost:2 "$py" "$work/writer.py" 3 >/dev/null 2>"$work/err"
  status=$?
  [ "$status" = 3 ] || die "status $status, expected 3: $(tail -5 "$work/err")"
  grep -qF "rank 1 (pid" "$work/err" || die "the failed rank is not named: $(tail -5 "$work/err")"
  ;;
output-closed)
  # `hvdrun ... | head -3`: the reader closes the pipe, the launcher dies of SIGPIPE
  # writing to it. Not a fault: hvdrun ends quietly with 128+13, as other tools do,
  # and leaves no rank behind.
  { "$hvdrun" -np 1 sh -c 'while :; do echo hvdrun-case-output-closed; done' 2>"$work/err"
    echo $? >"$work/status"; } | head -3 >"$work/head"
  [ "$(cat "$work/status")" = 141 ] || die "status $(cat "$work/status"), expected 141: $(tail -5 "$work/err")"
  [ "$(wc -l <"$work/head")" = 3 ] || die "head got: $(cat "$work/head")"
  ! grep -q "died of signal\|a fault of the MPI launcher" "$work/err" || die "blamed the launcher: $(cat "$work/err")"
  sleep 0.2
  ! pgrep -f "hvdrun-case-output-closed" >/dev/null || die "a rank was left running"
  ;;
output-files)
  "$hvdrun" -np 2 --output-filename "$work/logs" \
    sh -c 'r=${PMI_RANK:-$OMPI_COMM_WORLD_RANK}; echo "out $r"; echo "err $r" >&2' \
    >"$work/terminal" 2>&1 || die "hvdrun failed: $(cat "$work/terminal")"
  for r in 0 1; do
    # Hydra writes DIR/rank.R.stdout; Open MPI 4.1 DIR/1/rank.R/stdout.
    out="$work/logs/rank.$r.stdout" err="$work/logs/rank.$r.stderr"
    if [ ! -e "$out" ]; then
      out="$work/logs/1/rank.$r/stdout" err="$work/logs/1/rank.$r/stderr"
    fi
    [ "$(cat "$out")" = "out $r" ] || die "$out: $(cat "$out")"
    [ "$(cat "$err")" = "err $r" ] || die "$err: $(cat "$err")"
  done
  ! grep -q "out 0" "$work/terminal" || die "output also went to the terminal"
  ;;
scaling-usage-errors)
  # Bad --scaling options are refused before anything runs, with status 2.
  export HVDRUN_MPIEXEC="$fakes/fake_mpich"
  expect_error "--scaling runs each size it lists; leave out -np" -- "$hvdrun" --scaling 1,2 -np 2 prog
  expect_error "--scaling 1,,2: give the numbers of ranks separated by commas" -- "$hvdrun" --scaling 1,,2 prog
  expect_error "--scaling 0,1: a size must be at least 1 rank" -- "$hvdrun" --scaling 0,1 prog
  expect_error "'-1' is not a number of ranks" -- "$hvdrun" --scaling 1,-1 prog
  expect_error "'x' is not a number of ranks" -- "$hvdrun" --scaling x prog
  expect_error "--price-per-hour needs --hours" -- "$hvdrun" --scaling 1,2 --price-per-hour 2 prog
  expect_error "--time-value needs --price-per-hour" -- "$hvdrun" --scaling 1,2 --time-value 2 prog
  expect_error "--hours 0: must be more than 0" -- "$hvdrun" --scaling 1 --price-per-hour 1 --hours 0 prog
  expect_error "--plot needs --scaling" -- "$hvdrun" -np 2 --plot p.png prog
  expect_error "--samples-per-step" -- "$hvdrun" --scaling 1 --samples-per-step lots prog
  # More ranks than the hosts have: stopped before the first run.
  expect_error "--scaling: 4 ranks need 4 slots; -H a:1,b:2 has 3" -- "$hvdrun" --scaling 1,4 -H a:1,b:2 prog
  ! grep -q "launcher arguments" "$work/stdout" || die "a run was started"
  ;;
scaling-dry-run)
  # One launch per size: the first N slots of the hosts (or N on this machine), and
  # each run's own summary file in a temporary folder that is removed afterwards.
  export HVDRUN_MPIEXEC="$fakes/fake_mpich"
  "$hvdrun" --dry-run --scaling 2,1,3 --steps 5 -H a:1,b:2,c:4 prog --arg >"$work/out" 2>"$work/err" ||
    die "status $?: $(cat "$work/err")"
  dir=$(sed -n 's|.*HVD_SUMMARY_FILE \(.*\)/summary-1.json.*|\1|p' "$work/out")
  [ -n "$dir" ] || die "no summary file: $(cat "$work/out")"
  sed -e "s|$dir|DIR|" -e "s|$monitor|MON|" "$work/out" >"$work/got"
  printf '%s\n' \
    "$fakes/fake_mpich -n 1 -hosts a:1 -prepend-rank -genv HVD_SUMMARY_FILE DIR/summary-1.json -genv HVD_STEP_STATS_STEPS 5 MON prog --arg" \
    "$fakes/fake_mpich -n 2 -hosts a:1,b:1 -prepend-rank -genv HVD_SUMMARY_FILE DIR/summary-2.json -genv HVD_STEP_STATS_STEPS 5 MON prog --arg" \
    "$fakes/fake_mpich -n 3 -hosts a:1,b:2 -prepend-rank -genv HVD_SUMMARY_FILE DIR/summary-3.json -genv HVD_STEP_STATS_STEPS 5 MON prog --arg" \
    >"$work/want"
  cmp -s "$work/got" "$work/want" || die "got:
$(cat "$work/got")
expected:
$(cat "$work/want")"
  [ ! -e "$dir" ] || die "$dir was not removed"
  "$hvdrun" --dry-run --scaling 1,2 prog >"$work/out" 2>"$work/err" || die "status $?: $(cat "$work/err")"
  grep -q -- "-n 2 -hosts localhost:2 -prepend-rank -genv HVD_SUMMARY_FILE .*/summary-2.json $monitor prog$" "$work/out" ||
    die "without hosts: $(cat "$work/out")"
  ;;
scaling-failed-run)
  # A failing run stops the sweep with its status, naming the size.
  "$hvdrun" --scaling 1,2 "$probe" --exit-rank 0 3 >"$work/out" 2>"$work/err"
  status=$?
  [ "$status" = 3 ] || die "status $status, expected 3: $(cat "$work/err")"
  grep -qF "the run on 1 rank failed with exit status 3; stopping" "$work/err" || die "$(cat "$work/err")"
  ! grep -qF "run 2 of 2" "$work/err" || die "the sweep went on: $(cat "$work/err")"
  ;;
scaling-no-summary)
  # A program that does not use libhvd writes no summary: said plainly, status 1.
  "$hvdrun" --scaling 1,2 true >"$work/out" 2>"$work/err"
  status=$?
  [ "$status" = 1 ] || die "status $status, expected 1: $(cat "$work/err")"
  grep -qF "the run on 1 rank wrote no step summary: 'true' must use libhvd" "$work/err" ||
    die "$(cat "$work/err")"
  ;;
scaling-train-linear)
  # The whole sweep over a real libhvd job: table, JSON and plot. (Needs libhvd's step
  # summary, HVD_SUMMARY_FILE.)
  "$hvdrun" --scaling 1,2 --samples-per-step 16 --price-per-hour 2 --hours 10 \
    --json "$work/s.json" --plot "$work/s.png" "$probe" >"$work/out" 2>"$work/err"  # train_linear
  status=$?
  python=${HVDRUN_PYTHON:-python3}
  has_matplotlib=yes
  "$python" -c "import matplotlib" 2>/dev/null || has_matplotlib=no
  if [ "$status" != 0 ]; then
    [ "$status" = 1 ] && [ $has_matplotlib = no ] && grep -qF "cannot import matplotlib" "$work/err" ||
      die "status $status: $(cat "$work/err")"
  fi
  grep -q "^ranks  step time  samples/s  efficiency  exposed comm  time (h)  *cost$" "$work/out" ||
    die "no table header: $(cat "$work/out")"
  grep -qE "^ +1 +[0-9.]+ [mu]?s +[0-9.]+ +100\.0% +[0-9.]+% +10\.00 +20\.00$" "$work/out" ||
    die "no row for 1 rank: $(cat "$work/out")"
  grep -qE "^ +2 +[0-9.]+ [mu]?s +[0-9.]+ +[0-9.]+% +[0-9.]+% +[0-9.]+ +[0-9.]+$" "$work/out" ||
    die "no row for 2 ranks: $(cat "$work/out")"
  "$python" - "$work/s.json" <<'PY' || die "JSON: $(cat "$work/s.json")"
import json, sys
report = json.load(open(sys.argv[1]))
runs = report["runs"]
assert [r["ranks"] for r in runs] == [1, 2], runs
assert runs[0]["efficiency"] == 1 and runs[0]["hours"] == 10 and runs[0]["cost"] == 20, runs[0]
for r in runs:
    assert r["summary"]["ranks"] == r["ranks"] and r["summary"]["steps"] > 0, r
    assert abs(r["efficiency"] - runs[0]["step_seconds"] / r["step_seconds"]) < 1e-6, r
    assert abs(r["throughput"] - 16 * r["ranks"] / r["step_seconds"]) < 1e-6 * r["throughput"], r
PY
  if [ $has_matplotlib = yes ]; then
    [ -s "$work/s.png" ] || die "no plot"
    [ "$(head -c 4 "$work/s.png" | od -An -c | tr -d ' ')" = "211PNG" ] || die "not a PNG"
  else
    echo "matplotlib is not importable by $python: the plot was not checked"
  fi
  [ -z "$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'hvdrun-scaling.*' -newer "$work" 2>/dev/null)" ] ||
    die "a summary folder was left behind"
  ;;
*)
  die "unknown case"
  ;;
esac
echo "ok: $case_name"
