// The coordinator's check that every rank asked for the same operation on a tensor.
#pragma once

#include <string>
#include <vector>

#include "queue/response.h"

namespace hvd {

// specs[i] is what world rank world_ranks[i] announced for the tensor. Returns the
// Response to execute, or one carrying HVD_ERR_MISMATCH with a message that names the
// tensor, the field and which ranks hold which value.
// set_size: the members of the tensor's process set (-1: every member announced, so
// specs.size()). When every rank agrees, the reduction itself is checked (reduction_error): a
// reduction that cannot be done fails on every rank with the same error.
Response agree(const std::string& key, const std::string& name,
               const std::vector<TensorSpec>& specs, const std::vector<int>& world_ranks,
               int set_size = -1);

// Why an agreed allreduce or reducescatter over a set of set_size ranks cannot run
// (HVD_OP_ADASUM on a reducescatter, an integer dtype or a set whose size is not a
// power of two; AVERAGE or scale factors on HVD_BOOL), or success. Checked here rather than when the call is made:
// a rank whose dtype or op differs from the others' must meet a mismatch on every
// rank, not a refusal on its own while the others wait for it.
Error reduction_error(const std::string& name, const TensorSpec& spec, int set_size);

}  // namespace hvd
