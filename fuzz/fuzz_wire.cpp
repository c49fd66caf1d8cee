// libFuzzer target for wire_decode: a negotiation message from another rank, which
// may be corrupt or truncated. Decoding must reject it with an error or give a
// message that encodes back to exactly the same bytes; never read out of bounds
// (AddressSanitizer checks every read).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "negotiate/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly size bytes, so any read past the end is caught.
  std::vector<uint8_t> input(data, data + size);
  hvd::WireMessage message;
  hvd::Error err = hvd::wire_decode(input.data(), input.size(), &message);
  if (!err.ok()) {
    if (err.message.empty()) std::abort();  // a rejection always says why
    return 0;
  }
  std::vector<uint8_t> again;
  hvd::wire_encode(message, &again);
  if (again.size() != size || (size && std::memcmp(again.data(), data, size) != 0))
    std::abort();
  return 0;
}
