// The fusion planner: which ready responses are reduced together in one buffer.
// It sees only negotiated data (specs, never local pointers), so every rank plans
// the same batches. It is part of core, as Horovod's controller fuses responses:
// it reads Responses, and lib/fusion (the copies) sits below core.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/response.h"

namespace hvd {

struct FusionConfig {
  int64_t threshold = 128ll << 20;     // largest fused buffer; 0 disables fusion
  int64_t inplace_min_bytes = 256 << 10;  // tensors this large are never copied
  bool disable_group_fusion = false;
};

struct Batch {
  std::vector<size_t> items;  // indices into the responses, in order
  bool fused = false;         // packed into the fusion buffer
  int64_t bytes = 0;          // payload of all items
};

// True if the response could share a fusion buffer with others.
bool fusable(const Response& response, const FusionConfig& config);

std::vector<Batch> plan_batches(std::span<const Response> responses, const FusionConfig& config);

}  // namespace hvd
