// Host memory laid out for the transfers. MPI moves a large message between ranks of
// one machine with single copies from the other process's memory (process_vm_readv),
// for which the kernel looks up and pins every page of the buffer: a buffer in 2 MiB
// pages moves 20-30% faster than one in 4 KiB pages (docs/performance.md). Linux backs
// anonymous memory with huge pages only where asked when its transparent huge pages are
// in "madvise" mode (Debian's and Ubuntu's default); these functions ask. Over a network
// the pages make no difference that we could measure, and they cost nothing there.
#pragma once

#include <cstddef>

namespace hvd {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// Asks for huge pages for the whole 2 MiB pages inside [ptr, ptr + bytes); the rest of
// the range is left alone. Advice only: the data stays as it is; pages not yet touched
// get huge pages at their first touch, pages already in place may be merged later by
// the kernel. Returns the bytes advised: 0 where the range holds no whole huge page or
// the system has no such advice (not Linux, transparent huge pages off).
size_t advise_huge_pages(void* ptr, size_t bytes);

// `bytes` of uninitialized memory, released with std::free (so with hvd_free): from
// half a huge page up, aligned to a huge page, rounded up to whole ones and advised
// before anything touches it; below that, plain malloc. nullptr when out of memory.
void* alloc_host(size_t bytes);

// A buffer that grows and is reused (the fusion buffer, scratch), from alloc_host.
// What it held is not kept when it grows.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();

  // At least `bytes` bytes (std::bad_alloc when out of memory, as a vector's resize).
  unsigned char* reserve(size_t bytes) {
    if (bytes > capacity_) grow(bytes);
    return data_;
  }

 private:
  void grow(size_t bytes);

  unsigned char* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace hvd
