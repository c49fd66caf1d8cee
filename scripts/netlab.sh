#!/bin/sh
# The network lab: a small cluster of "nodes" on one machine, with real TCP between
# them. Each node is a network namespace whose processes see a hostname of their own
# (a UTS namespace per launch), with two links into bridges of the root namespace:
#   eth0  the data network, between the nodes only (the bridge has no address, so
#         nothing leaves it); MPI traffic goes here, optionally at a set rate;
#   ctl0  the control network, to the launcher in the root namespace (the bridge's
#         address, forwarding off); Hydra's proxies and Open MPI's daemons report
#         here, so a node whose data link is down can still be told to end, as on a
#         cluster whose launcher talks over its management network.
# Ranks of one node share memory (MPICH's shared memory); ranks of different nodes
# talk TCP (UCX_TLS=tcp,self over eth0). The nodes still share the machine's IPC and
# /dev/shm: UCX's shared-memory transports must stay out of UCX_TLS, or UCX carries
# traffic between nodes through memory (measured: no byte on the links). MPICH's
# ranks get tools/netlab's finalize guard preloaded (see finalize_guard.c).
# Jobs launch with MPICH's Hydra (-launcher rsh) or Open MPI's mpirun (plm_rsh_agent;
# ob1 with the tcp BTL over eth0 between nodes, vader within one), whichever the
# launcher is: MPIEXEC (default mpiexec) for mpiexec and args, HVDRUN_MPIEXEC or the
# MPI hvdrun was built with for hvdrun.
#
#   netlab.sh up DIR [-n NODES] [-r RATE] [-c]
#                                           make a lab whose state lives in DIR; -c:
#                                           each node's processes run on cores of their
#                                           own (see node_cpus)
#   netlab.sh down DIR                      end its processes, remove all it made
#   netlab.sh run [-n NODES] [-r RATE] [-c] [-d DIR] -- CMD...
#                                           up, CMD (with NETLAB_DIR set), down, even
#                                           when CMD fails or a signal arrives;
#                                           exits with CMD's status
#   netlab.sh mpiexec DIR SLOTS ARGS...     mpiexec into the lab: SLOTS is ranks per
#                                           node ("2" on every node, or "3,1"); more
#                                           ranks than slots go round robin over
#                                           one-slot nodes, with either MPI
#   netlab.sh hvdrun DIR SLOTS ARGS...      hvdrun (HVDRUN, default hvdrun) likewise;
#                                           SLOTS "-": no -H (--host-discovery-script)
#   netlab.sh args DIR                      print the launcher arguments, one a line
#   netlab.sh hosts DIR SLOTS               print the hosts ("name:2,name:2")
#   netlab.sh nodes DIR                     print the node names, one a line
#   netlab.sh exec DIR NODE CMD...          run CMD on a node
#   netlab.sh rate DIR NODE RATE            set a node's link rate ("1gbit", "unlimited")
#   netlab.sh link-down DIR NODE [data|ctl|all] | link-up DIR NODE [data|ctl|all]
#                                           the node's data link (default), its
#                                           control link to the launcher, or both
#   netlab.sh kill DIR NODE                 SIGKILL every process of a node
#   netlab.sh pids DIR [NODE]               processes on the lab's nodes
#
# NODE is a node's name or its index (0, 1, ...). Names, links and addresses are
# unique per lab, so several labs may run at once. Needs root, ip, tc and unshare;
# `up` and `run` exit 77 (skip) where a network namespace cannot be made.
set -eu

self=$(readlink -f "$0")
skip=77

die() { echo "netlab: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -eu/p' "$self" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# ---- lab state --------------------------------------------------------------

load() {
  dir=$(readlink -f "$1")
  [ -f "$dir/lab.env" ] || die "$1 holds no lab (no lab.env): start one with 'netlab.sh up $1'"
  . "$dir/lab.env"
}

# node_index NODE: the index of a node given by name or index.
node_index() {
  k=0
  for name in $NETLAB_NODES; do
    if [ "$1" = "$name" ] || [ "$1" = "$k" ] || [ "$1" = "$NETLAB_DATA_NET.$((10 + k))" ] ||
       [ "$1" = "$NETLAB_CTL_NET.$((10 + k))" ]; then
      echo "$k"
      return 0
    fi
    k=$((k + 1))
  done
  die "no node '$1' in this lab (nodes: $NETLAB_NODES)"
}

node_name() { echo "$NETLAB_NODES" | tr ' ' '\n' | sed -n "$(( $1 + 1 ))p"; }

# ---- up ---------------------------------------------------------------------

# Checks what the lab needs; exits 77 with the reason when it cannot be made here.
preflight() {
  [ "$(id -u)" = 0 ] || { echo "netlab: skipped: needs root (network namespaces)" >&2; exit $skip; }
  for tool in ip tc unshare; do
    command -v "$tool" >/dev/null 2>&1 ||
      { echo "netlab: skipped: '$tool' is not installed" >&2; exit $skip; }
  done
}

# A random hex word of $1 characters.
random_hex() { od -An -N8 -tx1 /dev/urandom | tr -d ' \n' | cut -c1-"$1"; }

# in_use NET: whether a route or address of the root namespace lies in NET.0/24.
in_use() { ip -4 -o addr show | grep -q " $1\." || ip -4 route show | grep -q "^$1\."; }

# Sets NETLAB_ID, NETLAB_DATA_NET and NETLAB_CTL_NET to a fresh id and two free /24s.
# Called under a lock on this script, so that two labs starting at once differ.
allocate() {
  tries=0
  while :; do
    tries=$((tries + 1))
    [ $tries -le 200 ] || die "found no free id and subnets in 200 tries"
    id=$(random_hex 5)
    ip link show "nl${id}d" >/dev/null 2>&1 && continue
    ip netns list | grep -q "^nl${id}-" && continue
    a=$(( 0x$(random_hex 2) % 64 + 160 )); b=$(( 0x$(random_hex 2) % 128 * 2 ))
    in_use "10.$a.$b" && continue
    in_use "10.$a.$((b + 1))" && continue
    NETLAB_ID=$id NETLAB_DATA_NET=10.$a.$b NETLAB_CTL_NET=10.$a.$((b + 1))
    return 0
  done
}

# sysctl_off KEY: writes 0 to a /proc/sys key if it exists.
sysctl_off() { [ -w "/proc/sys/$1" ] && echo 0 > "/proc/sys/$1" || true; }
sysctl_on() { [ -w "/proc/sys/$1" ] && echo 1 > "/proc/sys/$1" || true; }

# add_node K: namespace, data and control veths, addresses.
add_node() {
  k=$1 name=$NETLAB_PREFIX-$1
  ip netns add "$name"
  ip -n "$name" link set lo up
  for net in d c; do
    host=nl${NETLAB_ID}${net}$k
    ip link add "$host" type veth peer name "p$host"
    ip link set "p$host" netns "$name"
    sysctl_on "net/ipv6/conf/$host/disable_ipv6"
    ip link set "$host" master "nl${NETLAB_ID}$net" up
  done
  ip -n "$name" link set "pnl${NETLAB_ID}d$k" name eth0
  ip -n "$name" link set "pnl${NETLAB_ID}c$k" name ctl0
  ip netns exec "$name" sh -c '
    for l in all default eth0 ctl0; do echo 1 > /proc/sys/net/ipv6/conf/$l/disable_ipv6; done
    echo 0 > /proc/sys/net/ipv4/ip_forward'
  ip -n "$name" addr add "$NETLAB_DATA_NET.$((10 + k))/24" dev eth0
  ip -n "$name" addr add "$NETLAB_CTL_NET.$((10 + k))/24" dev ctl0
  ip -n "$name" link set eth0 up
  ip -n "$name" link set ctl0 up
}

write_state() {
  cat > "$dir/lab.env" <<EOF
NETLAB_ID=$NETLAB_ID
NETLAB_PREFIX=$NETLAB_PREFIX
NETLAB_DATA_NET=$NETLAB_DATA_NET
NETLAB_CTL_NET=$NETLAB_CTL_NET
NETLAB_NODES='$NETLAB_NODES'
NETLAB_PRELOAD='$NETLAB_PRELOAD'
NETLAB_GUARD='$NETLAB_GUARD'
NETLAB_OWN_CORES=$NETLAB_OWN_CORES
EOF
  # Hydra's -launcher-exec and Open MPI's plm_rsh_agent: called as "rsh HOST WORDS...",
  # runs WORDS through a shell on HOST, as rsh and ssh do.
  cat > "$dir/rsh" <<EOF
#!/bin/sh
exec "$self" rsh "$dir" "\$@"
EOF
  chmod +x "$dir/rsh"
}

# The finalize guard (tools/netlab/finalize_guard.c), preloaded into MPICH's ranks:
# NETLAB_FINALIZE_GUARD, else one built against MPICH in a build directory beside
# this script (the guard of an Open MPI build would load a second MPI). A sanitized
# build's guard (build-asan, build-tsan: linked to the sanitizer's runtime) is taken
# only when the caller preloads that runtime: preloaded into an ordinary program it
# stops every rank ("ASan runtime does not come first"), and build-asan sorts before
# build/.
find_guard() {
  NETLAB_GUARD=${NETLAB_FINALIZE_GUARD:-}
  if [ -z "$NETLAB_GUARD" ]; then
    for guard_file in "${self%/scripts/*}"/build*/tools/netlab/libnetlab_finalize_guard.so; do
      [ -f "$guard_file" ] || continue
      guard_libs=$(ldd "$guard_file" 2>/dev/null) || continue
      printf '%s\n' "$guard_libs" | grep -q libmpich || continue
      guard_runtime=$(printf '%s\n' "$guard_libs" | grep -oE 'lib[at]san\.so' | head -n 1)
      case "${guard_runtime:+x}:${LD_PRELOAD:-}" in
        :*) ;;                    # not sanitized
        *"$guard_runtime"*) ;;    # sanitized, and the caller preloads its runtime
        *) continue ;;
      esac
      NETLAB_GUARD=$guard_file
      break
    done
  fi
  [ -z "$NETLAB_GUARD" ] || NETLAB_GUARD=$(readlink -f "$NETLAB_GUARD")
  NETLAB_PRELOAD=${LD_PRELOAD:-}
  # A sanitized guard given by NETLAB_FINALIZE_GUARD (a sanitized build's netlab
  # tests): its runtime goes first unless the caller preloads it already.
  [ -n "$NETLAB_GUARD" ] || return 0
  guard_runtime=$(ldd "$NETLAB_GUARD" 2>/dev/null | awk '$1 ~ /^lib[at]san\.so/ { print $3; exit }')
  case "${guard_runtime:+x}:$NETLAB_PRELOAD" in
    :*) ;;
    *"$(basename "$guard_runtime" | grep -oE 'lib[at]san\.so')"*) ;;
    *) NETLAB_PRELOAD=$guard_runtime${NETLAB_PRELOAD:+:$NETLAB_PRELOAD} ;;
  esac
}

# preload FLAVOUR: LD_PRELOAD for the ranks, the caller's (a sanitizer's runtime must
# come first) and for MPICH the guard. Open MPI (ob1 over TCP) needs none: measured,
# 63 of 63 jobs of 4 ranks on two nodes ended without it.
preload() {
  guard=${NETLAB_GUARD:-}
  if [ "$1" != mpich ]; then echo "$NETLAB_PRELOAD"; return; fi
  [ -n "$guard" ] || echo "netlab: warning: no finalize guard (build tools/netlab against MPICH or set NETLAB_FINALIZE_GUARD); jobs of more than 2 ranks may hang in MPI_Finalize" >&2
  echo "${NETLAB_PRELOAD:+$NETLAB_PRELOAD${guard:+:}}$guard"
}

cmd_up() {
  [ $# -ge 1 ] || usage
  dir=$1; shift
  nodes=2 rate=unlimited NETLAB_OWN_CORES=0
  while [ $# -gt 0 ]; do
    case $1 in
      -n) nodes=$2; shift 2 ;;
      -r) rate=$2; shift 2 ;;
      -c) NETLAB_OWN_CORES=1; shift ;;
      *) usage ;;
    esac
  done
  case $nodes in ''|*[!0-9]*) die "-n $nodes: the number of nodes must be 1 to 200" ;; esac
  [ "$nodes" -ge 1 ] && [ "$nodes" -le 200 ] || die "-n $nodes: the number of nodes must be 1 to 200"
  preflight
  mkdir -p "$dir"
  dir=$(readlink -f "$dir")
  [ ! -e "$dir/lab.env" ] || die "$dir already holds a lab: 'netlab.sh down $dir' first"
  # A probe: some containers are root without the right to make namespaces.
  probe=nlprobe$$
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "netlab: skipped: cannot create a network namespace here" >&2
    exit $skip
  fi
  ip netns del "$probe"

  exec 9<"$self"
  flock 9
  allocate
  NETLAB_PREFIX=nl$NETLAB_ID
  NETLAB_NODES=$(k=0; while [ $k -lt "$nodes" ]; do printf '%s ' "$NETLAB_PREFIX-$k"; k=$((k + 1)); done)
  NETLAB_NODES=${NETLAB_NODES% }
  # State first: a failure from here on is cleaned up by 'down'.
  find_guard
  write_state
  trap 'exec 9<&-; echo "netlab: up failed; removing what was made" >&2; cmd_down "$dir"; exit 1' EXIT
  ip link add "nl${NETLAB_ID}d" type bridge
  ip link add "nl${NETLAB_ID}c" type bridge
  for br in d c; do
    sysctl_on "net/ipv6/conf/nl${NETLAB_ID}$br/disable_ipv6"
  done
  ip addr add "$NETLAB_CTL_NET.1/24" dev "nl${NETLAB_ID}c"
  sysctl_off "net/ipv4/conf/nl${NETLAB_ID}c/forwarding"
  ip link set "nl${NETLAB_ID}d" up
  ip link set "nl${NETLAB_ID}c" up
  k=0
  while [ $k -lt "$nodes" ]; do
    add_node $k
    [ "$rate" = unlimited ] || set_rate $k "$rate"
    k=$((k + 1))
  done
  trap - EXIT
  exec 9<&-
  cores=
  if [ "$NETLAB_OWN_CORES" = 1 ]; then
    k=0
    while [ $k -lt "$nodes" ]; do cores="$cores${cores:+ | }$(node_cpus $k)"; k=$((k + 1)); done
    cores=", CPUs by node $cores"
  fi
  echo "netlab: $nodes nodes up ($NETLAB_NODES), data $NETLAB_DATA_NET.0/24, rate $rate$cores, state in $dir" >&2
}

# ---- down -------------------------------------------------------------------

# ns_pids NAME: the processes in a node's namespace.
ns_pids() { ip netns pids "$1" 2>/dev/null || true; }

# net_ns_pids INODE: the processes whose network namespace is INODE (also once the
# namespace has lost its name).
net_ns_pids() {
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/net" 2>/dev/null)" != "net:[$1]" ] || echo "${p#/proc/}"
  done
}

cmd_down() {
  load "$1"
  # Names first: once a namespace has no name, nothing new can enter it; then its
  # processes, found by the namespace itself, until none is left.
  inodes=
  k=0
  for name in $NETLAB_NODES; do
    ino=$(stat -L -c %i "/run/netns/$name" 2>/dev/null || true)
    inodes="$inodes $ino"
    # The root-side ends at once: a namespace's own links go only when the kernel
    # gets to free it, which may be later.
    ip link del "nl${NETLAB_ID}d$k" 2>/dev/null || true
    ip link del "nl${NETLAB_ID}c$k" 2>/dev/null || true
    ip netns del "$name" 2>/dev/null || true
    k=$((k + 1))
  done
  tries=0
  while :; do
    pids=$(for ino in $inodes; do net_ns_pids "$ino"; done)
    [ -n "$pids" ] || break
    [ $tries -lt 100 ] || die "processes still on the nodes after 10 s: $pids"
    kill -KILL $pids 2>/dev/null || true
    sleep 0.1; tries=$((tries + 1))
  done
  ip link del "nl${NETLAB_ID}d" 2>/dev/null || true
  ip link del "nl${NETLAB_ID}c" 2>/dev/null || true
  rm -f "$dir/lab.env" "$dir/rsh"
  left=$(ip netns list | grep "^$NETLAB_PREFIX-" || true)
  [ -z "$left" ] || die "namespaces left after down: $left"
}

# ---- run --------------------------------------------------------------------

cmd_run() {
  nodes=2 rate=unlimited rundir= cores=
  while [ $# -gt 0 ]; do
    case $1 in
      -n) nodes=$2; shift 2 ;;
      -r) rate=$2; shift 2 ;;
      -c) cores=-c; shift ;;
      -d) rundir=$2; shift 2 ;;
      --) shift; break ;;
      *) usage ;;
    esac
  done
  [ $# -gt 0 ] || usage
  preflight
  own_dir=
  if [ -z "$rundir" ]; then
    rundir=$(mktemp -d "${TMPDIR:-/tmp}/netlab.XXXXXX")
    own_dir=$rundir
  fi
  mkdir -p "$rundir"
  status=0
  child= group=
  # Teardown always runs: on exit, on the signals a test runner sends, and, should
  # this process be killed outright (SIGKILL), by a reaper in a session of its own
  # that wakes when the last writer of a pipe, this process, is gone.
  mkfifo "$rundir/.alive"
  setsid "$self" reap "$rundir" "$own_dir" < "$rundir/.alive" > /dev/null 2>&1 &
  exec 7> "$rundir/.alive"
  trap 'cleanup' EXIT
  trap 'status=143; exit 143' TERM
  trap 'status=130; exit 130' INT
  trap 'status=129; exit 129' HUP
  # In a subshell: up's own trap undoes a half-made lab and must not replace ours.
  ( cmd_up "$rundir" -n "$nodes" -r "$rate" $cores ) || { status=$?; exit $status; }
  NETLAB_DIR=$(readlink -f "$rundir")
  export NETLAB_DIR
  # In a process group of its own (setsid), so that teardown also reaches what the
  # command started and then left behind (a launcher whose parent script was killed
  # is no longer its descendant, but still in its group).
  setsid "$@" 7>&- &
  child=$! group=$!
  echo $child > "$rundir/.command"
  wait $child || status=$?
  child=
  exit $status
}

# descendants PID: PID and every process below it, parents first.
descendants() {
  echo "$1"
  for c in $(pgrep -P "$1" 2>/dev/null || true); do descendants "$c"; done
}

cleanup() {
  # The command and all it started (a launcher left behind by a shell that was
  # told to end would outlive the lab).
  # Its group too, even when the command itself has ended: what it left running
  # (orphans keep the group) would outlive the lab.
  procs=
  [ -z "$child" ] || procs=$(descendants "$child")
  [ -z "$group" ] || kill -s TERM -- -"$group" $procs 2>/dev/null || true
  if [ -f "$rundir/lab.env" ]; then ( cmd_down "$rundir" ) || status=1; fi
  # Hydra's mpiexec may ignore SIGTERM once its proxies are gone: what is left of
  # the command now goes for good.
  [ -z "$group" ] || kill -s KILL -- -"$group" $procs 2>/dev/null || true
  if [ -n "$child" ]; then wait "$child" 2>/dev/null || true; fi
  rm -f "$rundir/.alive" "$rundir/.command"
  [ -z "$own_dir" ] || rm -rf "$own_dir"
  exit $status
}

# reap DIR [OWN_DIR]: waits for end of input (the run that started it is gone), then
# removes the lab if that run could not.
cmd_reap() {
  cat > /dev/null
  # The run's command, then the lab (whose removal ends the command's launcher).
  procs= group=
  if [ -f "$1/.command" ]; then
    group=$(cat "$1/.command")
    procs=$(descendants "$group")
  fi
  [ -z "$group" ] || kill -s TERM -- -"$group" $procs 2>/dev/null || true
  if [ -f "$1/lab.env" ]; then cmd_down "$1" || true; fi
  [ -z "$group" ] || kill -s KILL -- -"$group" $procs 2>/dev/null || true
  rm -f "$1/.alive" "$1/.command"
  [ -z "${2:-}" ] || rm -rf "$2"
}

# ---- launching --------------------------------------------------------------

# hosts SLOTS: "name:s0,name:s1,..." from "s" (every node) or "s0,s1,...".
hosts() {
  case $1 in *,*) list=$1 ;; *) list=$(for n in $NETLAB_NODES; do printf '%s,' "$1"; done) ;; esac
  k=0 out=
  for s in $(echo "$list" | tr ',' ' '); do
    case $s in ''|*[!0-9]*) die "slots '$1': give ranks per node, e.g. 2 or 3,1" ;; esac
    [ $k -lt $(echo $NETLAB_NODES | wc -w) ] || die "slots '$1': more entries than the lab's nodes ($NETLAB_NODES)"
    [ "$s" = 0 ] || out=$out$(node_name $k):$s,
    k=$((k + 1))
  done
  echo "${out%,}"
}

# flavour LAUNCHER: "openmpi" or "mpich" (Hydra: MPICH and Intel MPI), from what the
# launcher says of itself.
flavour() {
  case $("$1" --version 2>&1 || true) in
    *"Open MPI"*|*OpenRTE*) echo openmpi ;;
    *) echo mpich ;;
  esac
}

# launcher_args FLAVOUR: the launcher's arguments into this lab, less the hosts, the
# ranks' environment and what hvdrun gives of itself, one a line.
launcher_args() {
  if [ "$1" = mpich ]; then
    printf '%s\n' -launcher rsh -launcher-exec "$dir/rsh" -localhost "$NETLAB_CTL_NET.1"
    return
  fi
  # The daemons report over the control network, whose address on this side is the
  # bridge's (a subnet names both ends). ob1 with the tcp BTL, not UCX: the tcp BTL
  # keeps to eth0 and vader joins only ranks of one node, by node name. Single copy
  # off: containers often forbid cross-memory attach. The nodes share the machine's
  # cores: waiting ranks yield. Hydra wraps more ranks than slots round the hosts;
  # Open MPI does so only when told.
  printf '%s\n' --mca plm_rsh_agent "$dir/rsh" --mca oob_tcp_if_include "$NETLAB_CTL_NET.0/24" \
    --mca pml ob1 --mca btl tcp,self,vader --mca btl_tcp_if_include eth0 \
    --mca btl_vader_single_copy_mechanism none --mca mpi_yield_when_idle 1 --oversubscribe
}

# mpiexec_args FLAVOUR: launcher_args and the ranks' environment, one a line. UCX is
# told too, should a user's own arguments choose it for Open MPI.
mpiexec_args() {
  launcher_args "$1"
  p=$(preload "$1")
  if [ "$1" = mpich ]; then
    printf '%s\n' -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0
    [ -z "$p" ] || printf '%s\n' -genv LD_PRELOAD "$p"
  else
    # As hvdrun does: mpirun refuses root unless told (the lab runs as root), and
    # would bind every node's ranks to the same first cores of the machine they share.
    printf '%s\n' --allow-run-as-root --bind-to none -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=eth0
    [ -z "$p" ] || printf '%s\n' -x "LD_PRELOAD=$p"
  fi
}

# The launcher of mpiexec and args, by its full path: mpirun so started starts the
# nodes' daemons by theirs too (an implied --prefix), whatever their PATH.
launcher() {
  l=$(command -v "${MPIEXEC:-mpiexec}") || die "no launcher '${MPIEXEC:-mpiexec}' (set MPIEXEC)"
  case $l in /*) ;; *) l=$PWD/$l ;; esac
  echo "$l"
}

cmd_mpiexec() {
  [ $# -ge 2 ] || usage
  load "$1"; h=$(hosts "$2"); slots=$2; shift 2
  l=$(launcher); f=$(flavour "$l")
  # Hydra wraps ranks beyond the slots round robin; Open MPI, told to oversubscribe,
  # would fill the first node: --map-by node places them as Hydra does on one-slot
  # nodes (and changes nothing while the ranks fit, one a node).
  if [ "$f" = mpich ]; then hosts_flag=-hosts map=; else hosts_flag=-H map=--map-by; fi
  for s in $(echo "$slots" | tr ',' ' '); do [ "$s" = 1 ] || map=; done
  # One word a line, spaces and all.
  IFS='
'
  set -- $(mpiexec_args "$f") "$hosts_flag" "$h" ${map:+"$map"} ${map:+node} "$@"
  exec "$l" "$@"
}

cmd_hvdrun() {
  [ $# -ge 2 ] || usage
  # SLOTS "-": no -H (an elastic job's hosts come from its discovery script).
  load "$1"; h=; [ "$2" = - ] || h=$(hosts "$2"); shift 2
  hvdrun=${HVDRUN:-hvdrun}
  # hvdrun's launcher: HVDRUN_MPIEXEC, else that of the MPI hvdrun was built with.
  if [ -n "${HVDRUN_MPIEXEC:-}" ]; then
    f=$(flavour "$HVDRUN_MPIEXEC")
  else
    case $("$hvdrun" --check-build 2>&1 || true) in *"Open MPI"*) f=openmpi ;; *) f=mpich ;; esac
  fi
  p=$(preload "$f")
  exec "$hvdrun" ${h:+-H "$h"} --mpi-args "$(launcher_args "$f" | tr '\n' ' ')" \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=eth0 ${p:+-x "LD_PRELOAD=$p"} "$@"
}

# node_cpus K: the CPUs node K's processes may run on in a lab made with -c: the
# machine's CPUs (those this script may use) in equal shares, one share per node, or
# one CPU per node, shared round robin, where there are more nodes than CPUs. Nodes
# stand for machines: without shares, the scheduler may put the busiest threads of two
# nodes on one core while the other idles (measured: a lone allreduce's ranks both on
# one core in its slowest runs), which separate machines never do.
node_cpus() {
  list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
  cpus=$(echo "$list" | tr ',' '\n' | while IFS=- read -r lo hi; do seq "$lo" "${hi:-$lo}"; done)
  ncpu=$(echo "$cpus" | wc -l)
  nnodes=$(echo $NETLAB_NODES | wc -w)
  if [ "$ncpu" -ge "$nnodes" ]; then
    share=$((ncpu / nnodes))
    echo "$cpus" | sed -n "$(($1 * share + 1)),$(($1 * share + share))p" | paste -sd, -
  else
    echo "$cpus" | sed -n "$(($1 % ncpu + 1))p"
  fi
}

# on_node K CMD...: CMD in node K's network namespace and a UTS namespace named after
# it (and on the node's CPUs, in a lab made with -c).
on_node() {
  k=$1; shift
  name=$(node_name "$k")
  if [ "${NETLAB_OWN_CORES:-0}" = 1 ]; then
    set -- taskset -c "$(node_cpus "$k")" "$@"
  fi
  exec ip netns exec "$name" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$name" "$@"
}

cmd_rsh() {
  load "$1"; k=$(node_index "$2"); shift 2
  on_node "$k" sh -c "$*"
}

cmd_exec() {
  [ $# -ge 3 ] || usage
  load "$1"; k=$(node_index "$2"); shift 2
  on_node "$k" "$@"
}

# ---- faults and rates -------------------------------------------------------

# set_rate K RATE: token bucket on both ends of node K's data link (each end shapes
# what it sends), or no shaping for "unlimited".
set_rate() {
  k=$1 name=$(node_name "$1")
  for where in "ip" "ip -n $name"; do
    dev=nl${NETLAB_ID}d$k
    [ "$where" = ip ] || dev=eth0
    tcw="tc"; [ "$where" = ip ] || tcw="tc -n $name"
    $tcw qdisc del dev "$dev" root 2>/dev/null || true
    # burst above a 64 KiB segment (veths pass segmentation offload's large frames)
    [ "$2" = unlimited ] || $tcw qdisc add dev "$dev" root tbf rate "$2" burst 256kb latency 50ms
  done
}

cmd_rate() {
  [ $# -eq 3 ] || usage
  load "$1"; set_rate "$(node_index "$2")" "$3"
}

cmd_link() {
  [ $# -eq 2 ] || [ $# -eq 3 ] || usage
  load "$1"; k=$(node_index "$2")
  case ${3:-data} in
    data) nets=d ;; ctl) nets=c ;; all) nets='d c' ;;
    *) die "no link '$3': data, ctl or all" ;;
  esac
  for net in $nets; do ip link set "nl${NETLAB_ID}$net$k" "$state"; done
}

cmd_kill() {
  [ $# -eq 2 ] || usage
  load "$1"; name=$(node_name "$(node_index "$2")")
  pids=$(ns_pids "$name")
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}

cmd_pids() {
  load "$1"
  if [ $# -ge 2 ]; then names=$(node_name "$(node_index "$2")"); else names=$NETLAB_NODES; fi
  for name in $names; do ns_pids "$name"; done
}

[ $# -ge 1 ] || usage
what=$1; shift
case $what in
  up) cmd_up "$@" ;;
  down) [ $# -eq 1 ] || usage; cmd_down "$1" ;;
  run) cmd_run "$@" ;;
  mpiexec) cmd_mpiexec "$@" ;;
  hvdrun) cmd_hvdrun "$@" ;;
  args) [ $# -eq 1 ] || usage; load "$1"; mpiexec_args "$(flavour "$(launcher)")" ;;
  hosts) [ $# -eq 2 ] || usage; load "$1"; hosts "$2" ;;
  nodes) [ $# -eq 1 ] || usage; load "$1"; echo "$NETLAB_NODES" | tr ' ' '\n' ;;
  rsh) cmd_rsh "$@" ;;
  reap) cmd_reap "$@" ;;
  exec) cmd_exec "$@" ;;
  rate) cmd_rate "$@" ;;
  link-down) state=down cmd_link "$@" ;;
  link-up) state=up cmd_link "$@" ;;
  kill) cmd_kill "$@" ;;
  pids) cmd_pids "$@" ;;
  -h|--help|help) usage ;;
  *) usage ;;
esac
