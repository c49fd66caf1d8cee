#include "tune/step_detector.h"

namespace hvd {

bool StepDetector::observe(std::string_view name) {
  if (seen_.find(name) == seen_.end()) {
    seen_.emplace(name);
    return false;
  }
  seen_.clear();
  seen_.emplace(name);
  return true;
}

}  // namespace hvd
