// Ranks named in messages: "0, 2, 5", the first 16 and then a count, so that a
// message about a large job stays one readable line.
#pragma once

#include <string>
#include <vector>

namespace hvd {

// "0, 2, 5"; beyond 16 ranks: "0, 1, ..., 15, ... (40 ranks)".
std::string rank_list(const std::vector<int>& ranks);

}  // namespace hvd
