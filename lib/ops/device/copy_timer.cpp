#include "ops/device/copy_timer.h"

#include "hvd_build_config.h"

#if HVD_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace hvd {

CopyTimer::CopyTimer(void* stream) : stream_(stream) {}

#if HVD_HAVE_CUDA

CopyTimer::~CopyTimer() {
  for (void* e : starts_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  for (void* e : stops_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

void CopyTimer::enable(bool on) {
  on_ = on;
  if (!on) used_ = 0, open_ = false;
}

bool CopyTimer::pair_ready(size_t index) {
  while (starts_.size() <= index) {
    cudaEvent_t a = nullptr, b = nullptr;
    if (cudaEventCreate(&a) != cudaSuccess || cudaEventCreate(&b) != cudaSuccess) {
      if (a) cudaEventDestroy(a);
      cudaGetLastError();  // ours, not the caller's: clear it
      return false;
    }
    starts_.push_back(a);
    stops_.push_back(b);
  }
  return true;
}

void CopyTimer::start() {
  open_ = false;
  if (!on_ || !pair_ready(used_)) return;
  if (cudaEventRecord(static_cast<cudaEvent_t>(starts_[used_]), static_cast<cudaStream_t>(stream_)) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  open_ = true;
}

void CopyTimer::stop() {
  if (!open_) return;
  open_ = false;
  if (cudaEventRecord(static_cast<cudaEvent_t>(stops_[used_]), static_cast<cudaStream_t>(stream_)) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  ++used_;
}

int64_t CopyTimer::take_ns() {
  double ms_total = 0;
  for (size_t i = 0; i < used_; ++i) {
    float ms = 0;
    // Not ready (the caller did not wait) or failed: that pair is left out.
    if (cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(starts_[i]), static_cast<cudaEvent_t>(stops_[i])) ==
        cudaSuccess)
      ms_total += ms;
    else
      cudaGetLastError();
  }
  used_ = 0;
  return static_cast<int64_t>(ms_total * 1e6);
}

#else

CopyTimer::~CopyTimer() = default;
void CopyTimer::enable(bool on) { on_ = on; }
bool CopyTimer::pair_ready(size_t) { return false; }
void CopyTimer::start() {}
void CopyTimer::stop() {}
int64_t CopyTimer::take_ns() { return 0; }

#endif

}  // namespace hvd
