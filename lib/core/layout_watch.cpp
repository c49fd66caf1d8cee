#include "core/layout_watch.h"

#include <algorithm>

#include "base/dtype.h"

namespace hvd {

void LayoutWatch::begin_round(size_t responses) { noted_.assign(responses, Noted{}); }

void LayoutWatch::note(size_t index, const Request* local) {
  if (index < noted_.size()) noted_[index] = Noted{true, local};
}

LayoutWatch::Stream& LayoutWatch::stream_of(const TensorSpec& spec) {
  for (Stream& s : streams_) {
    const TensorSpec& x = *s.spec;
    // The planner's fusion key for a host allreduce (core/fusion_planner.cpp).
    if (x.dtype == spec.dtype && x.reduce_op == spec.reduce_op && x.prescale == spec.prescale &&
        x.postscale == spec.postscale && x.process_set == spec.process_set)
      return s;
  }
  Stream& s = streams_.emplace_back();
  s.spec = &spec;
  return s;
}

void LayoutWatch::end_round(std::span<const Response> responses) {
  streams_.clear();
  const size_t n = std::min(noted_.size(), responses.size());
  for (size_t i = 0; i < n; ++i) {
    if (!noted_[i].seen) continue;
    const Response& r = responses[i];
    const Request* local = noted_[i].local;
    Stream& s = stream_of(r.spec);
    const int64_t bytes = r.spec.num_elements() * static_cast<int64_t>(dtype_size(r.spec.dtype));
    const auto* start = local ? static_cast<const unsigned char*>(local->recv) : nullptr;
    const bool in_place = local && local->send == local->recv;
    if (!in_place || (s.tensors > 0 && s.end != start)) s.broken = true;
    s.end = in_place ? start + bytes : nullptr;
    s.has_large = s.has_large || bytes >= large_bytes_;
    ++s.tensors;
  }
  // Only streams with a large tensor among others say anything: fusion leaves small
  // tensors' batches as they are, and a lone large tensor is one piece either way.
  bool any = false, all_back_to_back = true;
  for (const Stream& s : streams_) {
    if (!s.has_large || s.tensors < 2) continue;
    any = true;
    all_back_to_back = all_back_to_back && !s.broken;
  }
  if (any) back_to_back_ = all_back_to_back;
  noted_.clear();
}

}  // namespace hvd
