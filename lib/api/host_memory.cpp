// Exported: host memory that libhvd allocates (outputs, and memory laid out for its
// transfers) and advice on memory the caller allocated.
#include <cstdlib>

#include "api/validate.h"
#include "base/host_memory.h"
#include "hvd/hvd.h"

using namespace hvd;

extern "C" {

HVD_API hvd_status_t hvd_alloc_host(size_t nbytes, void** ptr) {
  if (!ptr) return fail(HVD_ERR_INVALID_ARGUMENT, "hvd_alloc_host: ptr is NULL (pass the address of a void*)");
  *ptr = alloc_host(nbytes);
  if (!*ptr)
    return fail(HVD_ERR_NO_MEMORY, "hvd_alloc_host: could not allocate %zu bytes of host memory", nbytes);
  return HVD_SUCCESS;
}

HVD_API hvd_status_t hvd_advise_host(void* ptr, size_t nbytes, size_t* advised) {
  if (advised) *advised = 0;
  if (!ptr && nbytes > 0)
    return fail(HVD_ERR_INVALID_ARGUMENT, "hvd_advise_host: ptr is NULL with nbytes %zu", nbytes);
  const size_t covered = advise_huge_pages(ptr, nbytes);
  if (advised) *advised = covered;
  return HVD_SUCCESS;
}

HVD_API void hvd_free(void* ptr) { std::free(ptr); }

}  // extern "C"
