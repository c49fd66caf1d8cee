// The values the autotuner chooses, as a plain struct the coordinator sends with the
// negotiation so that every rank switches at the same cycle, and its fixed-size wire
// form (little-endian, versioned; independent of the struct's layout and padding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hvd {

struct TunedParams {
  int64_t fusion_threshold = 128ll << 20;  // bytes
  double cycle_time_ms = 1.0;
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;
  bool torus_allreduce = false;  // Horovod's column; never tuned (no such algorithm here)
  bool cache_enabled = true;
  bool tuning = false;       // samples are still being taken: more changes will come
  uint32_t generation = 0;   // increases with every change the coordinator decides
};

bool operator==(const TunedParams& a, const TunedParams& b);

constexpr size_t kTunedParamsWireSize = 24;

void encode_tuned_params(const TunedParams& params, uint8_t out[kTunedParamsWireSize]);

// False (out untouched) when data is not an encoding this version understands: wrong
// size or version, unknown flag bits, a negative threshold or a cycle time that is not
// a finite number >= 0.
bool decode_tuned_params(const uint8_t* data, size_t size, TunedParams* out);

// "hierarchical_allreduce=0 hierarchical_allgather=0 cache=1 cycle_time_ms=1
// fusion_threshold=134217728", for log lines.
std::string describe(const TunedParams& params);

}  // namespace hvd
