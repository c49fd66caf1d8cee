// Process sets: groups of world ranks with their own communicator. Set 0 is the
// global set. Queried from user threads, changed only collectively, so a mutex
// guards the table and sets are shared immutably.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <mpi.h>

#include "ops/communicator.h"

namespace hvd {

struct ProcessSet {
  int32_t id = 0;
  std::vector<int> ranks;        // world ranks, ascending
  std::vector<int> set_rank_of;  // world rank -> set rank, -1 if not a member
  int my_set_rank = -1;
  MPI_Comm comm = MPI_COMM_NULL; // MPI_COMM_NULL on non-members

  int size() const { return static_cast<int>(ranks.size()); }
  bool member() const { return my_set_rank >= 0; }
  // What the backends take: built on the spot, nothing allocated.
  Communicator communicator() const { return {id, comm, my_set_rank, size()}; }
  // The set rank of a world rank, or -1 when it is not a member.
  int set_rank(int world_rank) const {
    if (world_rank < 0 || world_rank >= static_cast<int>(set_rank_of.size())) return -1;
    return set_rank_of[static_cast<size_t>(world_rank)];
  }
};

class ProcessSetTable {
 public:
  void add(std::shared_ptr<ProcessSet> set);
  std::shared_ptr<ProcessSet> find(int32_t id) const;
  std::shared_ptr<ProcessSet> remove(int32_t id);
  std::shared_ptr<ProcessSet> find_by_ranks(const std::vector<int>& ranks) const;
  std::vector<int32_t> ids() const;
  // Ids are never reused within a run, so a stale id cannot name a new set.
  int32_t next_id() const;
  std::vector<std::shared_ptr<ProcessSet>> all() const;

 private:
  mutable std::mutex mutex_;
  std::map<int32_t, std::shared_ptr<ProcessSet>> sets_;
  // The global set, read without the lock on every operation: written once, when it
  // is added at init (before any operation), and never removed.
  std::shared_ptr<ProcessSet> global_;
  std::atomic<bool> has_global_{false};
  int32_t next_id_ = 0;
};

// Builds a set over world ranks (collective over world: uses MPI_Comm_create_group
// semantics through MPI_Comm_split so every rank calls it).
std::shared_ptr<ProcessSet> make_process_set(int32_t id, const std::vector<int>& ranks,
                                             MPI_Comm world, int world_rank, int world_size);

}  // namespace hvd
