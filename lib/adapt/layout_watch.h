// Whether this rank's large host allreduces lie back to back in memory: a framework's
// flat gradient buffer (PyTorch's bucket views, Megatron's and DeepSpeed's contiguous
// buffers) submitted a tensor at a time.
//
// The executor reduces a piece of a fused batch where it lies when the piece is whole
// in one run of in-place tensors back to back (execute/execute.cpp), but large tensors are
// fused only where the set's fusion says so (FusionConfig::fuse_large), and each rank
// knows only its own memory. So each rank watches the rounds it runs: for each stream
// of host allreduces that share a fusion key, in the order the round answered them,
// does every tensor start where the one before it ended, in place? A round with a large
// tensor in such a stream gives a verdict; others leave the last one. The verdict goes
// into the next rounds' flags (RoundFlags::back_to_back, ANDed), so every rank fuses
// alike from the round that sees it, and a training loop, which lays out each step's
// gradients as the last step did, is then reduced in pieces of the allreduce call size
// where it lies: the calls the whole buffer would get as one tensor, with no copies.
// A wrong prediction costs one round its copies, never a wrong result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "queue/request.h"
#include "queue/response.h"

namespace hvd {

class LayoutWatch {
 public:
  // large_bytes: tensors of at least this size are the ones fusion leaves alone
  // (FusionConfig::inplace_min_bytes).
  explicit LayoutWatch(int64_t large_bytes) : large_bytes_(large_bytes) {}

  // Before a round's batches run: `responses` of them.
  void begin_round(size_t responses);
  // A host allreduce of the round (by its index in the responses) and this rank's
  // request for it (nullptr: a joined rank's zeros).
  // Only the addresses are kept: the request itself may be gone by the round's end.
  void note(size_t index, const Request* local) {
    if (index >= noted_.size()) return;
    noted_[index] = Noted{round_, local ? static_cast<const unsigned char*>(local->recv) : nullptr,
                          local && local->send == local->recv};
  }
  // Some noted batch may hold a large tensor (one alone, or a batch that fuses them);
  // a round without one says nothing and is not looked at (1000 small tensors a
  // round cost nothing beyond their notes).
  void may_hold_large() { may_hold_large_ = true; }
  // After the batches ran: the round's verdict, if it gives one.
  void end_round(std::span<const Response> responses);

  // This rank's word for the round's flags.
  bool back_to_back() const { return back_to_back_; }

 private:
  struct Noted {
    uint64_t round = 0;                  // noted in this round if round_
    const unsigned char* recv = nullptr;  // nullptr: no local request
    bool in_place = false;
  };
  // The end of the last tensor of one stream (responses with one fusion key) so far.
  struct Stream {
    const TensorSpec* spec = nullptr;
    const unsigned char* end = nullptr;  // nullptr: the last one was not in place here
    bool has_large = false;
    bool broken = false;
    int tensors = 0;
  };
  Stream& stream_of(const TensorSpec& spec);
  static bool same_stream(const TensorSpec& a, const TensorSpec& b);

  int64_t large_bytes_;
  std::vector<Noted> noted_;
  uint64_t round_ = 0;
  bool may_hold_large_ = false;
  std::vector<Stream> streams_;
  size_t last_stream_ = 0;  // the stream the last tensor went to
  bool back_to_back_ = false;
};

}  // namespace hvd
