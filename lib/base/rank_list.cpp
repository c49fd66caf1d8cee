#include "base/rank_list.h"

namespace hvd {

std::string rank_list(const std::vector<int>& ranks) {
  constexpr size_t kNamed = 16;
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < kNamed; ++i) {
    if (i) s += ", ";
    s += std::to_string(ranks[i]);
  }
  if (ranks.size() > kNamed) s += ", ... (" + std::to_string(ranks.size()) + " ranks)";
  return s;
}

}  // namespace hvd
