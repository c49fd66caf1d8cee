// Training steps seen from the coordinator, as Horovod counts them: a step ends when a
// tensor name that was already executed in it comes back. Windows of whole steps
// give steadier autotune scores than windows of negotiation rounds, whose number per
// step changes with the fusion threshold.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/tensor_key.h"

namespace hvd {

class StepDetector {
 public:
  // Notes one executed tensor; true when it begins a new step. hash: hash_key(name),
  // or 0 (computed here).
  bool observe(std::string_view name, size_t hash = 0);
  // The same for a tensor read from response cache slot `slot` (-1: none): a slot that
  // held the same key last time is its own record, without a lookup by name.
  bool observe(std::string_view name, size_t hash, int slot);
  size_t tracked() const { return seen_.size(); }  // names held (tests)
  void reset() {
    seen_.clear();
    slots_.clear();
    step_ = 1;
    in_step_ = 0;
  }

 private:
  // Each name with the last step it ran in. Names stay from step to step (the same
  // ones come back every step), so observing one allocates nothing in steady state;
  // names that stop coming back (automatic names count up) are dropped when they
  // outnumber the step's own.
  std::unordered_map<TensorKey, uint64_t, TensorKeyHash, TensorKeyEqual> seen_;
  // By cache slot: the key's hash and the last step it ran in. A name seen through its
  // slot is not updated in seen_; it is looked up there again only if it comes back by
  // name, where an older step reads as "not yet in this one".
  struct SlotSeen {
    size_t hash = 0;
    uint64_t step = 0;
  };
  std::vector<SlotSeen> slots_;
  uint64_t step_ = 1;
  size_t in_step_ = 0;  // names seen in the current step
};

}  // namespace hvd
