// The negotiation message one rank contributes to a round: the tensors it announces
// for the first time and the coordinator's decisions. Binary, little-endian as the
// host writes it (all ranks run one build); every length is checked on decoding, so
// a corrupt or truncated message is an error, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "queue/request.h"

namespace hvd {

enum class WireKind : uint8_t {
  Request = 0,   // name + spec: this rank has enqueued the tensor
  Timeout = 1,   // name + process set + text: the coordinator fails a stalled tensor
  Tuning = 2,    // text: the coordinator's new tuned parameters (all ranks switch now)
  Refused = 3,   // name + op, process set, group size + text: this rank refused the call
};

struct WireEntry {
  WireKind kind = WireKind::Request;
  std::string name;
  TensorSpec spec;
  std::string text;
  // Request: seconds this rank had already waited for the tensor when it announced
  // it (a request that waited on the response cache, then was announced by name so
  // that the stall inspector can see who is missing).
  double waited = 0;
};

struct WireMessage {
  std::vector<WireEntry> entries;
};

// Names longer than this are refused at enqueue, so a decoded length above it is corrupt.
constexpr size_t kMaxNameBytes = 1 << 16;

void wire_encode(const WireMessage& message, std::vector<uint8_t>* out);
Error wire_decode(const uint8_t* data, size_t size, WireMessage* out);

}  // namespace hvd
