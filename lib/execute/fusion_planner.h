// The fusion planner: which ready responses are reduced together in one buffer.
// It sees only negotiated data (specs, never local pointers), so every rank plans
// the same batches. It is part of core, as Horovod's controller fuses responses:
// it reads Responses, and lib/fusion (the copies) sits below core.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "queue/response.h"

namespace hvd {

struct FusionConfig {
  int64_t threshold = 128ll << 20;     // largest fused buffer; 0 disables fusion
  int64_t inplace_min_bytes = 256 << 10;  // tensors this large are reduced alone...
  bool disable_group_fusion = false;
  // ...unless this says yes for their process set: then host allreduces of every size
  // up to the threshold join fused batches, which the executor reduces piece by piece,
  // each piece in the tensors' own memory where it lies in one tensor (or in one run
  // of in-place tensors back to back). Over TCP a stream of equal pieces runs
  // much faster than one call sequence per tensor with its odd-sized tail (see
  // docs/performance.md, 2026-11-27 07:15 entry); over shared memory the pieces that
  // straddle two tensors cost more in copies than they save. It must answer the same
  // on every rank: the runtime decides per set from the node layout and the options.
  std::function<bool(int32_t process_set)> fuse_large;
  // Whether those batches keep their pieces (nearly) one size (Backend::staging_pieces):
  // where the set spans nodes. Over TCP one odd-sized call slows the full-sized calls
  // after it; over shared memory a short last piece costs nothing, and padding it to
  // the others' size reduces zeros (a flat resnet50 buffer in 16 MiB pieces: a 1.6 MB
  // tail copied and reduced as 16 MiB, +15-20% a step; docs/performance.md, 2026-11-29
  // 07:00 entry). Unset: no. The same on every rank.
  std::function<bool(int32_t process_set)> equal_pieces;
};

struct Batch {
  std::vector<size_t> items;  // indices into the responses, in order
  bool fused = false;         // packed into the fusion buffer
  int64_t bytes = 0;          // payload of all items
  // A host allreduce batch in a set that fuse_large names, fused or a tensor alone (one
  // above the threshold): it may hold large tensors, and goes through the staged path,
  // piece by piece, each piece where it lies when it can.
  bool fuses_large = false;
  // ...and its pieces are kept (nearly) one size (Backend::staging_pieces: cut evenly,
  // or the short last piece padded to the others' size), where config.equal_pieces
  // says so: over TCP an odd-sized call would slow the full-sized calls after it, the
  // next batch's or, measured on bert_base, the next step's.
  bool equal_pieces = false;
};

// True if the response could share a fusion buffer with others.
bool fusable(const Response& response, const FusionConfig& config);

std::vector<Batch> plan_batches(std::span<const Response> responses, const FusionConfig& config);

// plan_batches, remembered: a round whose responses are the same cached responses in
// the same order as the last planned round's (a training loop's steady state: every
// tensor answered from the response cache) gets the same plan without planning again.
// A cached response's version names its content (queue/response.h), so equal versions
// are equal inputs; the config's numbers are compared too, and forget() is called
// when anything behind config.fuse_large changes (the tuned hierarchical choice).
// Every rank sees the same rounds, so every rank reuses alike.
class PlanMemo {
 public:
  const std::vector<Batch>& plan(std::span<const Response> responses, const FusionConfig& config);
  void forget() { valid_ = false; }

 private:
  bool matches(std::span<const Response> responses, const FusionConfig& config) const;

  std::vector<uint64_t> versions_;
  int64_t threshold_ = 0;
  int64_t inplace_min_bytes_ = 0;
  bool disable_group_fusion_ = false;
  std::vector<Batch> batches_;
  bool valid_ = false;
};

}  // namespace hvd
