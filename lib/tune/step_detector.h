// Training steps seen from the coordinator, as Horovod counts them: a step ends when a
// tensor name that was already executed in it comes back. Windows of whole steps
// give steadier autotune scores than windows of negotiation rounds, whose number per
// step changes with the fusion threshold.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

namespace hvd {

class StepDetector {
 public:
  // Notes one executed tensor; true when it begins a new step (the set then restarts
  // with this name).
  bool observe(std::string_view name);
  void reset() { seen_.clear(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_set<std::string, Hash, std::equal_to<>> seen_;
};

}  // namespace hvd
