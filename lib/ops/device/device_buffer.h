// Growable buffers for device work: device memory from CUDA's stream-ordered
// allocator on the library stream (the device fusion buffer, descriptor tables), and
// page-locked host memory for staging (fast DMA, and safe for async copies).
// Growing never copies the old contents: they are scratch space.
#pragma once

#include <cstddef>

#include "base/error.h"

namespace hvd {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(void* stream) : stream_(stream) {}  // cudaStream_t it serves
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // At least bytes of device memory, usable by work queued on the stream from now
  // on; the old block is freed in stream order, after the work already queued.
  Error reserve(size_t bytes);
  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* stream_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // The caller guarantees no queued copy still uses the old block (freeing it
  // synchronizes the device anyway).
  Error reserve(size_t bytes);
  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hvd
