// Speculation: a lone small allreduce completed in its negotiation round.
//
// A job that reduces one small tensor at a time (a loss, a metric, a counter, the
// step's last gradient) pays two round trips per tensor: the negotiation's bit
// vector, then the data. When the last round that ran anything ran exactly one
// eligible allreduce (host memory, global process set, sum, average, min, max or
// product, not grouped, at most the agreed HVD_SPECULATIVE_BYTES), the next round
// sends that tensor's data with the bit vector: one round trip.
//
// Both travel in one allreduce (ops/mpi/negotiation_op.h): the bit vector, two id
// words and the tensor, the words ANDed and the tensor reduced with its own op. A rank
// contributes its data and the tensor's cache slot when its own request for that slot
// is pending with the cached spec, and zeros and an id no slot has otherwise. After the
// AND, id word 0 equals the complement of word 1 exactly when every rank gave the same
// id. When every rank gave the slot and the bits make that tensor ready this round,
// the reduced data is its result on every rank, and it leaves the round's ready list;
// otherwise the data is dropped and the tensor runs as it would have.
//
// Every rank decides alike: the candidate follows from the ready lists and the
// response cache, the same on every rank, so the allreduce's layout agrees; the byte
// limit is agreed at init (the smallest over the ranks).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "negotiate/controller.h"
#include "queue/response.h"
#include "negotiate/response_cache.h"

namespace hvd {

class Speculation {
 public:
  static constexpr size_t kWords = 2;  // appended to the negotiation bit vector

  explicit Speculation(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // Before a round's allreduce: whether this round carries a payload (the same answer
  // on every rank), and if so how many uint64 words it takes after the id words.
  bool prepare(Controller& controller);
  size_t payload_words() const;
  // Writes the id words and the payload (payload_words() words) of this rank.
  void fill(uint64_t* id_words, void* payload) const;

  int64_t count() const { return count_; }
  const TensorSpec& spec() const { return spec_; }

  // After the AND: the index in ready of the tensor the payload completed, or -1.
  int completed_index(const uint64_t* words, std::span<const Response> ready) const;

  // A round's whole ready list (before any tensor left it) chooses the next candidate:
  // one eligible allreduce makes it the candidate, anything else clears it; an empty
  // list keeps it.
  void observe(std::span<const Response> ready, const ResponseCache& cache);

  // The cache was rebuilt (switched off or on): its slots mean nothing any more.
  void forget() { candidate_slot_ = -1; }

 private:
  bool eligible(const Response& r) const;

  int64_t max_bytes_;
  int candidate_slot_ = -1;
  // The round in flight.
  int slot_ = -1;
  std::string key_;
  TensorSpec spec_;
  int64_t count_ = 0;
  const Request* local_ = nullptr;  // this rank's request for it, if pending and alike
};

}  // namespace hvd
