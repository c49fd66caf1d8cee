#include "negotiate/speculation.h"

#include <cstring>

#include "base/dtype.h"
#include "fusion/scale.h"

namespace hvd {

namespace {

// The id of a rank that has nothing to contribute: no slot has it.
constexpr uint64_t kNoSlot = ~uint64_t{0};

}  // namespace

bool Speculation::eligible(const Response& r) const {
  const TensorSpec& s = r.spec;
  // Adasum combines pairwise, not elementwise.
  if (!r.error.ok() || s.op != OpType::Allreduce || s.process_set != 0 ||
      s.device != HVD_DEVICE_CPU || s.group_size > 1 || s.reduce_op == HVD_OP_ADASUM)
    return false;
  const int64_t bytes = s.num_elements() * static_cast<int64_t>(dtype_size(s.dtype));
  return bytes > 0 && bytes <= max_bytes_;
}

void Speculation::observe(std::span<const Response> ready, const ResponseCache& cache) {
  if (ready.empty()) return;
  candidate_slot_ = -1;
  if (ready.size() != 1 || !eligible(ready[0])) return;
  candidate_slot_ = cache.find(ready[0].key, ready[0].key_hash);
}

bool Speculation::prepare(Controller& controller) {
  slot_ = -1;
  local_ = nullptr;
  if (max_bytes_ <= 0 || candidate_slot_ < 0) return false;
  const ResponseCache& cache = controller.cache();
  // The slot may have been evicted or reused since: what it holds now decides, alike
  // on every rank.
  if (candidate_slot_ >= static_cast<int>(cache.capacity()) || !cache.occupied(candidate_slot_) ||
      !eligible(cache.at(candidate_slot_))) {
    candidate_slot_ = -1;
    return false;
  }
  const Response& cached = cache.at(candidate_slot_);
  slot_ = candidate_slot_;
  key_ = cached.key;
  spec_ = cached.spec;
  count_ = spec_.num_elements();
  const Request* local = controller.find_local_on_slot(slot_);
  if (local && local->spec == spec_) local_ = local;
  return true;
}

size_t Speculation::payload_words() const {
  const size_t bytes = static_cast<size_t>(count_) * dtype_size(spec_.dtype);
  return (bytes + 7) / 8;
}

void Speculation::fill(uint64_t* id_words, void* payload) const {
  const size_t bytes = static_cast<size_t>(count_) * dtype_size(spec_.dtype);
  if (local_) {
    copy_scaled(payload, local_->send, count_, spec_.dtype, spec_.prescale);
    id_words[0] = static_cast<uint64_t>(slot_);
    id_words[1] = ~static_cast<uint64_t>(slot_);
  } else {
    // Nothing to give: any bytes will do (the result is dropped), but zeros keep the
    // reduction free of NaN traps and denormal slow paths.
    std::memset(payload, 0, bytes);
    id_words[0] = kNoSlot;
    id_words[1] = ~kNoSlot;
  }
}

int Speculation::completed_index(const uint64_t* words, std::span<const Response> ready) const {
  if (slot_ < 0) return -1;
  // AND of the ids equals AND of the complements' complement only if all ids agree.
  if (words[0] != ~words[1] || words[0] != static_cast<uint64_t>(slot_)) return -1;
  // The slot's cached response, not another under the key: a call refused on some
  // rank fails under the same key (by name) in the round that drops its slot.
  for (size_t i = 0; i < ready.size(); ++i)
    if (ready[i].key == key_ && ready[i].cache_slot == slot_ && ready[i].error.ok())
      return static_cast<int>(i);
  return -1;  // e.g. a rank's request went stale and the slot was dropped this round
}

}  // namespace hvd
