#include "ops/device/device_runtime.h"

#include <cctype>
#include <mutex>

#include "hvd_build_config.h"

#if HVD_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "ops/device/cuda_check.h"
#endif

namespace hvd {

namespace {

[[maybe_unused]] const char* kNoCudaBuild = "this build of libhvd has no CUDA support";

}  // namespace

int cuda_device_count(std::string* why) {
#if HVD_HAVE_CUDA
  static std::once_flag once;
  static int count = 0;
  static std::string reason;
  std::call_once(once, [] {
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
      reason = std::string("CUDA reports no usable device: ") + cudaGetErrorString(rc);
      cudaGetLastError();  // do not leave the error sticky for the caller's next call
      n = 0;
    } else if (n == 0) {
      reason = "CUDA sees no device (check CUDA_VISIBLE_DEVICES)";
    }
    count = n;
  });
  if (why) *why = reason;
  return count;
#else
  if (why) *why = kNoCudaBuild;
  return 0;
#endif
}

Error cuda_pci_bus_id(int device, std::string* out) {
#if HVD_HAVE_CUDA
  char id[32] = "";
  HVD_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof id, device));
  std::string s(id);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // CUDA prints an 8-digit domain ("00000000:07:00.0"); hwloc prints 4.
  if (s.size() > 12 && s.find(':') == 8 && s.compare(0, 4, "0000") == 0) s.erase(0, 4);
  *out = s;
  return Error::success();
#else
  return make_error(HVD_ERR_CUDA, "%s", kNoCudaBuild);
#endif
}

Error cuda_set_device(int device) {
#if HVD_HAVE_CUDA
  std::string why;
  const int count = cuda_device_count(&why);
  if (device < 0 || device >= count)
    return make_error(HVD_ERR_CUDA, "CUDA device %d does not exist (%d visible%s%s)", device,
                      count, why.empty() ? "" : ": ", why.c_str());
  HVD_CUDA_CHECK(cudaSetDevice(device));
  return Error::success();
#else
  return make_error(HVD_ERR_CUDA, "cannot use CUDA device %d: %s", device, kNoCudaBuild);
#endif
}

Error cuda_get_device(int* device) {
#if HVD_HAVE_CUDA
  HVD_CUDA_CHECK(cudaGetDevice(device));
  return Error::success();
#else
  *device = -1;
  return make_error(HVD_ERR_CUDA, "%s", kNoCudaBuild);
#endif
}

MemoryKind memory_kind(const void* ptr, int* device) {
  if (device) *device = -1;
#if HVD_HAVE_CUDA
  if (!ptr || cuda_device_count(nullptr) == 0) return MemoryKind::Unknown;
  cudaPointerAttributes attr{};
  cudaError_t rc = cudaPointerGetAttributes(&attr, ptr);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    return MemoryKind::Unknown;
  }
  switch (attr.type) {
    case cudaMemoryTypeUnregistered: return MemoryKind::Host;
    case cudaMemoryTypeHost: return MemoryKind::PinnedHost;
    case cudaMemoryTypeDevice:
      if (device) *device = attr.device;
      return MemoryKind::Device;
    case cudaMemoryTypeManaged:
      if (device) *device = attr.device;
      return MemoryKind::Managed;
  }
  return MemoryKind::Unknown;
#else
  (void)ptr;
  return MemoryKind::Unknown;
#endif
}

Error check_pointer(const void* ptr, int device, const char* what) {
  int owner = -1;
  const MemoryKind kind = memory_kind(ptr, &owner);
  switch (kind) {
    case MemoryKind::Unknown:
    case MemoryKind::Managed:
      return Error::success();
    case MemoryKind::Host:
    case MemoryKind::PinnedHost:
      if (device < 0) return Error::success();
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "%s is host memory, but the operation names CUDA device %d", what, device);
    case MemoryKind::Device:
      if (device < 0)
        return make_error(HVD_ERR_INVALID_ARGUMENT,
                          "%s is memory of CUDA device %d, but the operation names the CPU "
                          "(set options.device)", what, owner);
      if (owner != device)
        return make_error(HVD_ERR_INVALID_ARGUMENT,
                          "%s is memory of CUDA device %d, but the operation names device %d",
                          what, owner, device);
      return Error::success();
  }
  return Error::success();
}

}  // namespace hvd
