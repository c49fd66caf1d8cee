#include "runtime/init_agreement.h"

#include <string>

#include "base/log.h"
#include "base/rank_list.h"
#include "base/tensor_key.h"
#include "params/params.h"
#include "topo/bind.h"
#include "topo/machine.h"

namespace hvd {

namespace {

// "1, 3" for the ranks whose flag is set.
std::string ranks_flagged(const std::vector<int>& flags) {
  std::vector<int> ranks;
  for (size_t r = 0; r < flags.size(); ++r)
    if (flags[r]) ranks.push_back(static_cast<int>(r));
  return rank_list(ranks);
}

// Every rank's flag, on every rank.
std::vector<int> gather_flags(MPI_Comm comm, int size, bool mine) {
  std::vector<int> flags(static_cast<size_t>(size));
  int flag = mine ? 1 : 0;
  MPI_Allgather(&flag, 1, MPI_INT, flags.data(), 1, MPI_INT, comm);
  return flags;
}

bool any(const std::vector<int>& flags) {
  for (int f : flags)
    if (f) return true;
  return false;
}

// Rank 0's copy of data (resized), sent to every rank.
template <typename T>
void broadcast_from_rank0(std::vector<T>* data, MPI_Datatype type, MPI_Comm comm) {
  int64_t n = static_cast<int64_t>(data->size());
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, comm);
  data->resize(static_cast<size_t>(n));
  if (n > 0) MPI_Bcast(data->data(), static_cast<int>(n), type, 0, comm);
}

// The sets as one list: their count, then each set's size and ranks.
std::vector<int> flatten(const std::vector<std::vector<int>>& sets) {
  std::vector<int> out{static_cast<int>(sets.size())};
  for (const std::vector<int>& set : sets) {
    out.push_back(static_cast<int>(set.size()));
    out.insert(out.end(), set.begin(), set.end());
  }
  return out;
}

// "{0, 2}, {1}" from flatten()'s list, shortened past 200 characters.
std::string describe(const std::vector<int>& flat) {
  if (flat.empty() || flat[0] == 0) return "none";
  std::string s;
  size_t at = 1;
  for (int i = 0; i < flat[0] && at < flat.size(); ++i) {
    if (i) s += ", ";
    const int n = flat[at++];
    s += "{";
    for (int k = 0; k < n && at < flat.size(); ++k, ++at) {
      if (k) s += ", ";
      s += std::to_string(flat[at]);
    }
    s += "}";
    if (s.size() > 200) return s + ", ...";
  }
  return s;
}

}  // namespace

Error adopt_rank0_params(Runtime& rt) {
  // Rank 0's values as text, "NAME=value" one after another, NUL-separated.
  std::vector<char> text;
  if (rt.rank == 0) {
    for (const char* name : agreed_param_names()) {
      std::string value;
      param_value_text(rt.params, name, &value);
      const std::string entry = std::string(name) + "=" + value;
      text.insert(text.end(), entry.begin(), entry.end());
      text.push_back('\0');
    }
  }
  broadcast_from_rank0(&text, MPI_CHAR, rt.world);
  if (rt.rank == 0) return Error::success();
  std::string differed;
  for (size_t at = 0; at < text.size();) {
    const std::string entry(&text[at]);
    at += entry.size() + 1;
    const size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq), theirs = entry.substr(eq + 1);
    std::string mine, why;
    param_value_text(rt.params, name.c_str(), &mine);
    if (mine == theirs) continue;
    if (!set_param_text(&rt.params, name.c_str(), theirs.c_str(), &why))
      return make_error(HVD_ERR_INTERNAL, "rank 0's %s=%s cannot be used here: %s", name.c_str(),
                        theirs.c_str(), why.c_str());
    differed += (differed.empty() ? "" : ", ") + name + "=" + mine + " (rank 0: " + theirs + ")";
  }
  if (!differed.empty())
    HVD_LOG(Warning, "this rank's %s: every rank uses rank 0's values of the settings that "
                     "decide the collectives each rank makes (ranks that differ there would "
                     "deadlock or reduce mismatched buffers); set them alike on every rank",
            differed.c_str());
  return Error::success();
}

Error agree_static_sets(Runtime& rt, const std::vector<std::vector<int>>& sets,
                        const Error& invalid) {
  const std::vector<int> invalid_on = gather_flags(rt.world, rt.size, !invalid.ok());
  if (!invalid.ok()) return invalid;
  if (any(invalid_on))
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "hvd_init_with_process_sets: rank(s) %s passed invalid process sets (their "
                      "error says what was wrong); every rank must pass the same, valid sets",
                      ranks_flagged(invalid_on).c_str());
  const std::vector<int> mine = flatten(sets);
  std::vector<int> rank0 = mine;
  broadcast_from_rank0(&rank0, MPI_INT, rt.world);
  const std::vector<int> differ_on = gather_flags(rt.world, rt.size, mine != rank0);
  if (any(differ_on)) {
    const std::string mine_text =
        rt.rank == 0 ? std::string() : "this rank (" + std::to_string(rt.rank) + ") passed " +
                                           describe(mine) + ", ";
    return make_error(HVD_ERR_MISMATCH,
                      "hvd_init: the ranks passed different static process sets: %srank 0 "
                      "passed %s, and rank(s) %s differ from rank 0. Every rank must pass the "
                      "same sets in the same order (hvd_init_with_process_sets; Python: "
                      "hvd.init(process_sets=...))",
                      mine_text.c_str(), describe(rank0).c_str(), ranks_flagged(differ_on).c_str());
  }
  for (size_t i = 0; i < sets.size(); ++i)
    if (sets[i].back() >= rt.size)
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "process set %zu names rank %d but there are only %d ranks", i + 1,
                        sets[i].back(), rt.size);
  return Error::success();
}

Error check_launcher_agrees(int world_size) {
  const LauncherSize launched = launcher_size();
  if (world_size != 1 || launched.size <= 1) return Error::success();
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(version, &len);
  for (char* c = version; *c; ++c) {  // its first line, on one line
    if (*c == '\n') *c = '\0';
    if (*c == '\t') *c = ' ';
  }
  return make_error(HVD_ERR_MPI,
                    "this process was started as one of %d ranks (%s=%d, set by %s), but its "
                    "MPI library sees a job of 1: libhvd was built against another MPI (%s) "
                    "than the launcher's, and each rank would run alone. Launch with the "
                    "launcher of the MPI that libhvd was built against (hvdrun from the same "
                    "build finds it), or build libhvd against the launcher's MPI",
                    launched.size, launched.variable, launched.size, launched.launcher, version);
}

MachinePeers find_machine_peers(Runtime& rt) {
  std::string place = machine_identity();
  CpuSet allowed;
  // Unknown CPUs: a place of its own, so nothing is cut for a rank that cannot tell.
  place += current_affinity(&allowed).ok() ? "|" + allowed.to_string()
                                           : "|unknown CPUs, rank " + std::to_string(rt.rank);
  const uint64_t mine[2] = {hash_key(place), static_cast<uint64_t>(rt.local_rank)};
  std::vector<uint64_t> all(2 * static_cast<size_t>(rt.size));
  MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, rt.world);
  // Ordered by local rank first: where the machine has fewer cores than ranks, a node's
  // ranks then land on different cores (its ranks' messages to each other need no
  // turn of one core's scheduler), as each node's own slices would put them.
  MachinePeers peers{0, 0};
  for (int r = 0; r < rt.size; ++r) {
    const uint64_t* theirs = &all[2 * static_cast<size_t>(r)];
    if (theirs[0] != mine[0]) continue;
    if (theirs[1] < mine[1] || (theirs[1] == mine[1] && r < rt.rank)) ++peers.rank;
    ++peers.size;
  }
  return peers;
}

bool agree_every_rank_has_a_cpu(Runtime& rt, double cpus_per_rank) {
  // The ranks of one machine: those whose identity hashes alike (a collision joins two
  // machines, which can only answer no where yes was right). The split's colour is the
  // first such rank.
  const uint64_t id = hash_key(machine_identity());
  std::vector<uint64_t> ids(static_cast<size_t>(rt.size));
  MPI_Allgather(&id, 1, MPI_UINT64_T, ids.data(), 1, MPI_UINT64_T, rt.world);
  int colour = 0;
  while (ids[static_cast<size_t>(colour)] != id) ++colour;
  MPI_Comm machine = MPI_COMM_NULL;
  int machine_ranks = 1;
  size_t machine_cpus = 0;
  if (MPI_Comm_split(rt.world, colour, rt.rank, &machine) == MPI_SUCCESS) {
    MPI_Comm_size(machine, &machine_ranks);
    const CpuSet mine = process_cpus(rt.pin);
    int words = mine.empty() ? 1 : mine.cpus().back() / 64 + 1;
    MPI_Allreduce(MPI_IN_PLACE, &words, 1, MPI_INT, MPI_MAX, machine);
    std::vector<uint64_t> mask = mine.to_words(static_cast<size_t>(words));
    MPI_Allreduce(MPI_IN_PLACE, mask.data(), words, MPI_UINT64_T, MPI_BOR, machine);
    machine_cpus = CpuSet::from_words(mask).size();
    MPI_Comm_free(&machine);
  }
  int own = cpus_per_rank >= 1 && machine_cpus >= static_cast<size_t>(machine_ranks) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &own, 1, MPI_INT, MPI_MIN, rt.world);
  HVD_LOG(Debug, "this machine: %d ranks on %zu CPUs; every rank has a CPU of its own: %s",
          machine_ranks, machine_cpus, own ? "yes" : "no");
  return own == 1;
}

}  // namespace hvd
