// A negotiated decision about one tensor: every rank of its process set computes the
// same Responses, in the same order, from the same round data.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "queue/request.h"

namespace hvd {

struct Response {
  std::string key;   // process set + name, as TensorQueue::key_of
  size_t key_hash = 0;  // hash_key(key), or 0 where not computed
  std::string name;
  TensorSpec spec;   // the spec of the lowest set rank
  // allgather: rows of each set rank; alltoall: set_size x set_size send splits,
  // row r holding what set rank r sends to each rank.
  std::vector<int64_t> per_rank;
  Error error;       // set: the tensor fails with this on every rank that has it
  // This rank refused the call (queue/request.h: Refusal): it has no request of this
  // instance, and a request under the same key is a later call, not to be completed.
  bool refused_here = false;
  // The response cache slot it was read from (negotiate/controller.h: local requests wait
  // there), or -1 for a response negotiated by name.
  int32_t cache_slot = -1;
  // Set by the response cache on each put, unique in the process: a copy whose slot
  // and version match the slot's response is that response (Controller::add_ready
  // then skips the copy; a name's slot hint is valid while its version is the slot's).
  // 0 for a response that is not a cached copy.
  uint64_t version = 0;

  // The spec set rank r announced (the common spec with its own rows or splits).
  TensorSpec spec_for(int set_rank, int set_size) const;
};

}  // namespace hvd
