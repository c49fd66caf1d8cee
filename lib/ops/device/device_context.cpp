#include "ops/device/device_context.h"

#include "hvd_build_config.h"
#include "ops/device/device_runtime.h"

#if HVD_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "ops/device/cuda_check.h"
#endif

namespace hvd {

// Disabled-timing events, recycled: creating one costs a driver call per operation.
class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  ~EventPool() {
#if HVD_HAVE_CUDA
    for (void* e : free_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
#endif
  }
  Error get(void** out) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        *out = free_.back();
        free_.pop_back();
        return Error::success();
      }
    }
#if HVD_HAVE_CUDA
    cudaEvent_t e;
    HVD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    *out = e;
    return Error::success();
#else
    return make_error(HVD_ERR_CUDA, "this build of libhvd has no CUDA support");
#endif
  }
  void put(void* e) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(e);
  }
  int device() const { return device_; }

 private:
  int device_;
  std::mutex mutex_;
  std::vector<void*> free_;
};

DeviceEvent::DeviceEvent(DeviceEvent&& other) noexcept
    : pool_(std::move(other.pool_)), event_(other.event_) {
  other.event_ = nullptr;
}

DeviceEvent& DeviceEvent::operator=(DeviceEvent&& other) noexcept {
  if (this != &other) {
    if (event_ && pool_) pool_->put(event_);
    pool_ = std::move(other.pool_);
    event_ = other.event_;
    other.event_ = nullptr;
  }
  return *this;
}

DeviceEvent::~DeviceEvent() {
  if (event_ && pool_) pool_->put(event_);
}

#if HVD_HAVE_CUDA

namespace {

// Makes a device current for the length of a scope, when it is not already.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device) cudaSetDevice(device);
    else previous_ = -1;
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

Error invalid_event() { return make_error(HVD_ERR_INVALID_ARGUMENT, "the device event was never recorded"); }

}  // namespace

Error DeviceEvent::query(bool* done) const {
  if (!event_) return invalid_event();
  cudaError_t rc = cudaEventQuery(static_cast<cudaEvent_t>(event_));
  if (rc == cudaErrorNotReady) {
    *done = false;
    return Error::success();
  }
  if (rc != cudaSuccess) return cuda_error(rc, "cudaEventQuery");
  *done = true;
  return Error::success();
}

Error DeviceEvent::synchronize() const {
  if (!event_) return invalid_event();
  HVD_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
  return Error::success();
}

Error DeviceEvent::make_stream_wait(void* stream) const {
  if (!event_) return invalid_event();
  HVD_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream),
                                     static_cast<cudaEvent_t>(event_), 0));
  return Error::success();
}

Error DeviceContext::create(int device, std::unique_ptr<DeviceContext>* out) {
  Error err = cuda_set_device(device);
  if (!err.ok()) return err;
  std::unique_ptr<DeviceContext> ctx(new DeviceContext());
  ctx->device_ = device;
  int least = 0, greatest = 0;
  HVD_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t stream;
  HVD_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
  ctx->stream_ = stream;
  cudaEvent_t ready;
  HVD_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  ctx->input_ready_ = ready;
  ctx->pool_ = std::make_shared<EventPool>(device);
  *out = std::move(ctx);
  return Error::success();
}

DeviceContext::~DeviceContext() {
  DeviceGuard guard(device_);
  if (stream_) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  }
  if (input_ready_) cudaEventDestroy(static_cast<cudaEvent_t>(input_ready_));
}

Error DeviceContext::wait_for(void* user_stream) {
  DeviceGuard guard(device_);
  // The wait captures the event as recorded now, so one event serves every call.
  HVD_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(input_ready_),
                                 static_cast<cudaStream_t>(user_stream)));
  HVD_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream_),
                                     static_cast<cudaEvent_t>(input_ready_), 0));
  return Error::success();
}

Error DeviceContext::record(DeviceEvent* out) {
  DeviceGuard guard(device_);
  DeviceEvent ev;
  Error err = pool_->get(&ev.event_);
  if (!err.ok()) return err;
  ev.pool_ = pool_;
  HVD_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(ev.event_),
                                 static_cast<cudaStream_t>(stream_)));
  *out = std::move(ev);
  return Error::success();
}

Error DeviceContext::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return Error::success();
  DeviceGuard guard(device_);
  HVD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                 static_cast<cudaStream_t>(stream_)));
  return Error::success();
}

Error DeviceContext::synchronize() {
  HVD_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
  return Error::success();
}

#else  // no CUDA: nothing can be created, so nothing else is reached.

namespace {
Error no_cuda() { return make_error(HVD_ERR_CUDA, "this build of libhvd has no CUDA support"); }
}  // namespace

Error DeviceEvent::query(bool*) const { return no_cuda(); }
Error DeviceEvent::synchronize() const { return no_cuda(); }
Error DeviceEvent::make_stream_wait(void*) const { return no_cuda(); }
Error DeviceContext::create(int device, std::unique_ptr<DeviceContext>*) {
  return make_error(HVD_ERR_CUDA, "cannot use CUDA device %d: this build of libhvd has no CUDA support", device);
}
DeviceContext::~DeviceContext() = default;
Error DeviceContext::wait_for(void*) { return no_cuda(); }
Error DeviceContext::record(DeviceEvent*) { return no_cuda(); }
Error DeviceContext::copy(void*, const void*, size_t) { return no_cuda(); }
Error DeviceContext::synchronize() { return no_cuda(); }

#endif

}  // namespace hvd
