#include "base/host_memory.h"

#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace hvd {

namespace {

uintptr_t round_down(uintptr_t at) { return at & ~(uintptr_t{kHugePageBytes} - 1); }
uintptr_t round_up(uintptr_t at) { return round_down(at + kHugePageBytes - 1); }

// Below half a huge page a whole one would more than double the memory.
constexpr size_t kHugeFrom = kHugePageBytes / 2;

// What alloc_host allocates for `bytes`: whole huge pages from kHugeFrom up.
size_t allocated_bytes(size_t bytes) { return bytes < kHugeFrom ? bytes : round_up(bytes); }

}  // namespace

size_t advise_huge_pages(void* ptr, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t at = reinterpret_cast<uintptr_t>(ptr);
  if (!ptr || bytes > UINTPTR_MAX - at) return 0;
  const uintptr_t begin = round_up(at), end = round_down(at + bytes);
  if (end <= begin) return 0;
  // EINVAL where the kernel has no transparent huge pages: nothing advised, no harm.
  if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) != 0) return 0;
  return end - begin;
#else
  (void)ptr;
  (void)bytes;
  return 0;
#endif
}

void* alloc_host(size_t bytes) {
  if (bytes < kHugeFrom) return std::malloc(bytes ? bytes : 1);
  if (bytes > SIZE_MAX - kHugePageBytes) return nullptr;
  const size_t rounded = allocated_bytes(bytes);
  void* memory = std::aligned_alloc(kHugePageBytes, rounded);
  if (memory) advise_huge_pages(memory, rounded);
  return memory;
}

HostBuffer::~HostBuffer() { std::free(data_); }

void HostBuffer::grow(size_t bytes) {
  std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
  void* memory = alloc_host(bytes);
  if (!memory) throw std::bad_alloc();
  data_ = static_cast<unsigned char*>(memory);
  capacity_ = allocated_bytes(bytes);
}

}  // namespace hvd
