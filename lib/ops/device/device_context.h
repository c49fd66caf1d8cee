// One CUDA device as the library uses it: its own stream (non-blocking, highest
// priority) on which every device operation runs, ordered after the callers' streams
// through events, and events that mark completion for hvd_wait (host-blocking) and
// for frameworks (a stream wait, host not blocked).
//
// Threads: create, wait_for, record and synchronize run on the background thread;
// DeviceEvent methods may run on any thread. In a build without CUDA, create fails
// with HVD_ERR_CUDA and nothing else can be reached.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "base/error.h"

namespace hvd {

class EventPool;

// Completion of the work queued on the library stream before it was recorded.
// Move-only; its CUDA event goes back to the pool when it is destroyed.
class DeviceEvent {
 public:
  DeviceEvent() = default;
  DeviceEvent(DeviceEvent&& other) noexcept;
  DeviceEvent& operator=(DeviceEvent&& other) noexcept;
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;
  ~DeviceEvent();

  bool valid() const { return event_ != nullptr; }
  // *done is true once the work has finished. Never blocks.
  Error query(bool* done) const;
  // Blocks the calling thread until the work has finished.
  Error synchronize() const;
  // Makes work queued later on stream (a cudaStream_t; nullptr is the default
  // stream) wait for the work, without blocking the host.
  Error make_stream_wait(void* stream) const;

 private:
  friend class DeviceContext;
  std::shared_ptr<EventPool> pool_;
  void* event_ = nullptr;  // cudaEvent_t
};

class DeviceContext {
 public:
  // Fails with HVD_ERR_CUDA (and the reason) when device does not exist or CUDA is
  // not usable; makes device current on the calling thread.
  static Error create(int device, std::unique_ptr<DeviceContext>* out);
  ~DeviceContext();  // waits for the library stream, then frees it

  int device() const { return device_; }
  void* stream() const { return stream_; }  // cudaStream_t

  // The library stream will not start later work before the work already queued on
  // user_stream (nullptr: the default stream) is done.
  Error wait_for(void* user_stream);
  // An event completing when everything queued so far on the library stream is done.
  Error record(DeviceEvent* out);
  // Queues a copy of bytes from src to dst (device or pinned host memory, either way)
  // on the library stream. Nothing to do when dst == src.
  Error copy(void* dst, const void* src, size_t bytes);
  // Blocks until the library stream is idle.
  Error synchronize();

 private:
  DeviceContext() = default;
  int device_ = -1;
  void* stream_ = nullptr;       // cudaStream_t
  void* input_ready_ = nullptr;  // cudaEvent_t, re-recorded by each wait_for
  std::shared_ptr<EventPool> pool_;
};

}  // namespace hvd
