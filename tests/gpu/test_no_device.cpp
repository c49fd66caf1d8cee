// Without a CUDA device (or without CUDA in the build), device work fails with
// HVD_ERR_CUDA and a sentence, and nothing crashes. Skipped where a device exists.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "ops/device/batched_copy.h"
#include "ops/device/device_buffer.h"
#include "ops/device/device_context.h"
#include "ops/device/device_runtime.h"

#include "../common/check.h"

using namespace hvd;


int main() {
  std::string why;
  if (cuda_device_count(&why) > 0) {
    std::printf("gpu-no-device: skipped: this machine has a CUDA device\n");
    return 77;
  }
  CHECK(!why.empty());
  std::unique_ptr<DeviceContext> ctx;
  Error err = DeviceContext::create(0, &ctx);
  CHECK(err.status == HVD_ERR_CUDA);
  CHECK(!err.message.empty());
  CHECK(!ctx);
  std::printf("DeviceContext::create(0): %s\n", err.message.c_str());
  CHECK(cuda_set_device(0).status == HVD_ERR_CUDA);
  std::string bus;
  CHECK(cuda_pci_bus_id(0, &bus).status == HVD_ERR_CUDA);
  int dummy = 0;
  CHECK(memory_kind(&dummy, nullptr) == MemoryKind::Unknown);
  CHECK(check_pointer(&dummy, 0, "x").ok());  // CUDA cannot tell: accepted as given
  PinnedBuffer pinned;
  err = pinned.reserve(1024);
  CHECK(err.status == HVD_ERR_CUDA);
  DeviceEvent none;
  bool done = false;
  CHECK(!none.query(&done).ok());
  std::printf("gpu-no-device: ok (%s)\n", why.c_str());
  return 0;
}
