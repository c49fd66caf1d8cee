// What the ranks settle together at init, before anything depends on it: the knobs
// that shape every rank's collectives, the static process sets, and that the MPI job
// is the one the launcher started. Each function is collective over rt.world and
// returns the same status on every rank, so a disagreement is an error everywhere,
// never one rank going on into a collective that its peers will not make.
#pragma once

#include <vector>

#include "base/error.h"
#include "runtime/runtime.h"

namespace hvd {

// Every rank takes rank 0's value of each of agreed_param_names() (params/params.h); a
// rank whose own value differed says which, and what it uses now.
Error adopt_rank0_params(Runtime& rt);

// sets: this rank's hvd_init_with_process_sets arguments; invalid: what was wrong
// with them, checked locally (or success). Fails on every rank if any rank's sets
// were invalid (HVD_ERR_INVALID_ARGUMENT), if the ranks passed different sets
// (HVD_ERR_MISMATCH, naming them), or if a set is out of range, repeats another or
// holds every rank (the global set, id 0).
Error agree_static_sets(Runtime& rt, const std::vector<std::vector<int>>& sets,
                        const Error& invalid);

// This rank's place among the ranks of its machine (topo/machine.h) that may run on the
// same CPUs (all of them, before any binding, as the network lab's nodes or containers
// without CPU sets of their own), ordered by local rank, then rank: what pinning
// slices the machine's cores by, where MPI's node (a hostname) holds only some of them.
struct MachinePeers {
  int rank = 0;
  int size = 1;
};
MachinePeers find_machine_peers(Runtime& rt);

// Whether every rank has a CPU of its own, the same answer on every rank: each rank
// has at least one (cpus_per_rank: its own, or its node's shared by the node's ranks),
// and on each machine (topo/machine.h) the ranks together may run on at least as many
// CPUs as there are of them. MPI's nodes are hostnames, and several on one machine
// (fake hosts, namespaces, containers) share its CPUs.
bool agree_every_rank_has_a_cpu(Runtime& rt, double cpus_per_rank);

// A process that the launcher started as one of N > 1 ranks but whose MPI library
// sees a job of one: libhvd was built against another MPI than the launcher's, and
// every rank would run alone, with its own data for every result.
Error check_launcher_agrees(int world_size);

}  // namespace hvd
