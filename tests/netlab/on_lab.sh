#!/bin/sh
# One job on a fresh lab, one node per entry of SLOTS, brought down afterwards:
#   on_lab.sh NETLAB SLOTS PROG ARGS...     through mpiexec
#   HVDRUN=path on_lab.sh NETLAB SLOTS PROG ARGS...   through hvdrun
# SLOTS gives ranks per node ("2,2", "3,1"); NETLAB_NP more ranks than that, placed
# round robin. NETLAB_RATE sets the link rate, and
# MPIEXEC_TIMEOUT (seconds, read by Hydra and by mpirun) ends a job that hangs, before
# the test runner's timeout would kill the lab's teardown with it; like every timeout
# of the suites it is scaled by HVD_TEST_TIMEOUT_MULTIPLIER (scripts/run-tests.sh).
set -eu
netlab=$1 slots=$2
shift 2
nodes=$(echo "$slots" | tr ',' '\n' | wc -l)
# NETLAB_NP above the slots' sum places the ranks round robin over the nodes.
np=${NETLAB_NP:-$(( $(echo "$slots" | tr ',' '+') ))}
export MPIEXEC_TIMEOUT=$(( ${MPIEXEC_TIMEOUT:-100} * ${HVD_TEST_TIMEOUT_MULTIPLIER:-1} ))
if [ -n "${HVDRUN:-}" ]; then how=hvdrun flag=-np; else how=mpiexec flag=-n; fi
exec "$netlab" run -n "$nodes" -r "${NETLAB_RATE:-unlimited}" -- \
  sh -c 'n=$0 how=$1 s=$2 flag=$3 np=$4; shift 4; exec "$n" "$how" "$NETLAB_DIR" "$s" "$flag" "$np" "$@"' \
  "$netlab" "$how" "$slots" "$flag" "$np" "$@"
