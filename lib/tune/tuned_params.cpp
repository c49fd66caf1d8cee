#include "tune/tuned_params.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace hvd {

namespace {

constexpr uint8_t kWireVersion = 1;

enum Flag : uint8_t {
  kHierarchicalAllreduce = 1 << 0,
  kHierarchicalAllgather = 1 << 1,
  kTorusAllreduce = 1 << 2,
  kCacheEnabled = 1 << 3,
  kTuning = 1 << 4,
  kAllFlags = (1 << 5) - 1,
};

void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

bool operator==(const TunedParams& a, const TunedParams& b) {
  return a.fusion_threshold == b.fusion_threshold && a.cycle_time_ms == b.cycle_time_ms &&
         a.hierarchical_allreduce == b.hierarchical_allreduce &&
         a.hierarchical_allgather == b.hierarchical_allgather &&
         a.torus_allreduce == b.torus_allreduce && a.cache_enabled == b.cache_enabled &&
         a.tuning == b.tuning && a.generation == b.generation;
}

// Layout: version, flags, two zero bytes, generation (u32), fusion threshold (i64),
// cycle time (IEEE-754 double bits).
void encode_tuned_params(const TunedParams& params, uint8_t out[kTunedParamsWireSize]) {
  uint8_t flags = (params.hierarchical_allreduce ? kHierarchicalAllreduce : 0) |
                  (params.hierarchical_allgather ? kHierarchicalAllgather : 0) |
                  (params.torus_allreduce ? kTorusAllreduce : 0) |
                  (params.cache_enabled ? kCacheEnabled : 0) | (params.tuning ? kTuning : 0);
  out[0] = kWireVersion;
  out[1] = flags;
  out[2] = out[3] = 0;
  for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<uint8_t>(params.generation >> (8 * i));
  put_u64(out + 8, static_cast<uint64_t>(params.fusion_threshold));
  uint64_t bits;
  std::memcpy(&bits, &params.cycle_time_ms, sizeof bits);
  put_u64(out + 16, bits);
}

bool decode_tuned_params(const uint8_t* data, size_t size, TunedParams* out) {
  if (!data || size != kTunedParamsWireSize || data[0] != kWireVersion) return false;
  uint8_t flags = data[1];
  if ((flags & ~kAllFlags) != 0 || data[2] != 0 || data[3] != 0) return false;
  TunedParams p;
  p.generation = 0;
  for (int i = 0; i < 4; ++i) p.generation |= static_cast<uint32_t>(data[4 + i]) << (8 * i);
  p.fusion_threshold = static_cast<int64_t>(get_u64(data + 8));
  uint64_t bits = get_u64(data + 16);
  std::memcpy(&p.cycle_time_ms, &bits, sizeof bits);
  if (p.fusion_threshold < 0 || !std::isfinite(p.cycle_time_ms) || p.cycle_time_ms < 0)
    return false;
  p.hierarchical_allreduce = flags & kHierarchicalAllreduce;
  p.hierarchical_allgather = flags & kHierarchicalAllgather;
  p.torus_allreduce = flags & kTorusAllreduce;
  p.cache_enabled = flags & kCacheEnabled;
  p.tuning = flags & kTuning;
  *out = p;
  return true;
}

std::string describe(const TunedParams& p) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "hierarchical_allreduce=%d hierarchical_allgather=%d cache=%d cycle_time_ms=%g "
                "fusion_threshold=%" PRId64 " (%.3g MiB)",
                p.hierarchical_allreduce, p.hierarchical_allgather, p.cache_enabled,
                p.cycle_time_ms, p.fusion_threshold,
                static_cast<double>(p.fusion_threshold) / (1 << 20));
  return buf;
}

}  // namespace hvd
