// The coordinator's check that every rank asked for the same operation on a tensor.
#pragma once

#include <string>
#include <vector>

#include "core/response.h"

namespace hvd {

// specs[i] is what world rank world_ranks[i] announced for the tensor. Returns the
// Response to execute, or one carrying HVD_ERR_MISMATCH with a message that names the
// tensor, the field and which ranks hold which value.
Response agree(const std::string& key, const std::string& name,
               const std::vector<TensorSpec>& specs, const std::vector<int>& world_ranks);

}  // namespace hvd
