// Exported functions whose implementation comes in a later release: each validates
// what it can and answers HVD_ERR_UNSUPPORTED, naming what is missing.
#include "api/validate.h"
#include "hvd/hvd.h"

using namespace hvd;

namespace {
hvd_status_t unsupported(const char* what) {
  return fail(HVD_ERR_UNSUPPORTED, "%s is not implemented in libhvd %s yet", what,
              hvd_version_string());
}
}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_allgather_async(const void*, int, const int64_t*, hvd_dtype_t, void**,
                                         int64_t*, int64_t*, const char*,
                                         const hvd_op_options_t*, hvd_handle_t*) {
  return unsupported("hvd_allgather");
}
HVD_API hvd_status_t hvd_allgather(const void*, int, const int64_t*, hvd_dtype_t, void**,
                                   int64_t*, int64_t*, const char*, const hvd_op_options_t*) {
  return unsupported("hvd_allgather");
}
HVD_API hvd_status_t hvd_alltoall_async(const void*, int, const int64_t*, hvd_dtype_t,
                                        const int64_t*, void**, int64_t*, int64_t*, const char*,
                                        const hvd_op_options_t*, hvd_handle_t*) {
  return unsupported("hvd_alltoall");
}
HVD_API hvd_status_t hvd_alltoall(const void*, int, const int64_t*, hvd_dtype_t, const int64_t*,
                                  void**, int64_t*, int64_t*, const char*,
                                  const hvd_op_options_t*) {
  return unsupported("hvd_alltoall");
}
HVD_API hvd_status_t hvd_reducescatter_async(const void*, void*, int, const int64_t*, hvd_dtype_t,
                                             hvd_reduce_op_t, const char*,
                                             const hvd_op_options_t*, hvd_handle_t*) {
  return unsupported("hvd_reducescatter");
}
HVD_API hvd_status_t hvd_reducescatter(const void*, void*, int, const int64_t*, hvd_dtype_t,
                                       hvd_reduce_op_t, const char*, const hvd_op_options_t*) {
  return unsupported("hvd_reducescatter");
}
HVD_API hvd_status_t hvd_barrier(int32_t) { return unsupported("hvd_barrier"); }
HVD_API hvd_status_t hvd_join(int, int*) { return unsupported("hvd_join"); }
HVD_API hvd_status_t hvd_add_process_set(const int*, int, int32_t*) {
  return unsupported("hvd_add_process_set (dynamic process sets)");
}
HVD_API hvd_status_t hvd_remove_process_set(int32_t) {
  return unsupported("hvd_remove_process_set (dynamic process sets)");
}
HVD_API hvd_status_t hvd_start_timeline(const char*, int) {
  return unsupported("hvd_start_timeline");
}
HVD_API hvd_status_t hvd_stop_timeline(void) { return unsupported("hvd_stop_timeline"); }

}  // extern "C"
