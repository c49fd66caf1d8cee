// Copies many device tensors in (to a fusion buffer) or out (from it) with one kernel
// launch, scaling folded in; see copy_kernel.h for the arithmetic, which matches the
// host copies of fusion/scale.h element for element.
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "hvd/hvd.h"
#include "ops/device/copy_kernel.h"
#include "ops/device/copy_timer.h"
#include "ops/device/device_buffer.h"

namespace hvd {

struct CopyItem {
  const void* src;
  void* dst;
  int64_t count;  // elements
};

class BatchedCopier {
 public:
  explicit BatchedCopier(void* stream);  // the library's cudaStream_t
  ~BatchedCopier();
  BatchedCopier(const BatchedCopier&) = delete;
  BatchedCopier& operator=(const BatchedCopier&) = delete;

  // Queues the copies on the stream and returns. src == dst is allowed (scaling in
  // place); other overlaps are not. factor 1 and divisor 1 is a plain copy.
  Error copy(const std::vector<CopyItem>& items, hvd_dtype_t dtype, double factor, int divisor);

  // Number of kernel launches so far (tests check there is one per call).
  uint64_t launches() const { return launches_; }

  // The GPU time of the copies, when step accounting asks for it.
  CopyTimer& timer() { return timer_; }

 private:
  void* stream_;
  PinnedBuffer host_descs_;
  DeviceBuffer device_descs_;
  void* uploaded_ = nullptr;  // cudaEvent_t: host_descs_ may be rewritten once it fired
  uint64_t launches_ = 0;
  CopyTimer timer_;
};

}  // namespace hvd
