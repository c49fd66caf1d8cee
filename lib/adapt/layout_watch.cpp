#include "adapt/layout_watch.h"

#include <algorithm>

#include "base/dtype.h"

namespace hvd {

void LayoutWatch::begin_round(size_t responses) {
  // Entries of earlier rounds carry their round: nothing to clear.
  if (noted_.size() < responses) noted_.resize(responses);
  ++round_;
  may_hold_large_ = false;
}

LayoutWatch::Stream& LayoutWatch::stream_of(const TensorSpec& spec) {
  // Consecutive tensors usually share a stream (one model's gradients).
  if (last_stream_ < streams_.size() && same_stream(*streams_[last_stream_].spec, spec))
    return streams_[last_stream_];
  for (size_t k = 0; k < streams_.size(); ++k) {
    if (!same_stream(*streams_[k].spec, spec)) continue;
    last_stream_ = k;
    return streams_[k];
  }
  last_stream_ = streams_.size();
  Stream& s = streams_.emplace_back();
  s.spec = &spec;
  return s;
}

bool LayoutWatch::same_stream(const TensorSpec& x, const TensorSpec& spec) {
  // The planner's fusion key for a host allreduce (execute/fusion_planner.cpp).
  return x.dtype == spec.dtype && x.reduce_op == spec.reduce_op && x.prescale == spec.prescale &&
         x.postscale == spec.postscale && x.process_set == spec.process_set;
}

void LayoutWatch::end_round(std::span<const Response> responses) {
  if (!may_hold_large_) return;
  streams_.clear();
  last_stream_ = 0;
  const size_t n = std::min(noted_.size(), responses.size());
  for (size_t i = 0; i < n; ++i) {
    if (noted_[i].round != round_) continue;
    const Response& r = responses[i];
    Stream& s = stream_of(r.spec);
    const int64_t bytes = r.spec.num_elements() * static_cast<int64_t>(dtype_size(r.spec.dtype));
    const unsigned char* start = noted_[i].recv;
    const bool in_place = noted_[i].in_place;
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
}

}  // namespace hvd
