// Argument checks shared by the exported functions. Each returns an Error that says
// which argument was wrong and what is accepted.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>

#include "core/enqueue.h"
#include "core/error.h"
#include "core/process_sets.h"
#include "core/request.h"
#include "core/runtime.h"

namespace hvd {

struct OpOptions {
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t device = HVD_DEVICE_CPU;
  int32_t process_set = 0;
  void* stream = nullptr;
  hvd_allocator_fn allocator = nullptr;
  void* allocator_data = nullptr;
};

// The runtime, or HVD_ERR_NOT_INITIALIZED naming the function.
Error require_runtime(const char* function, std::shared_ptr<Runtime>* rt);

Error read_options(const hvd_op_options_t* options, OpOptions* out);
Error check_dtype(hvd_dtype_t dtype);
Error check_reduce_op(hvd_reduce_op_t op, hvd_dtype_t dtype, const OpOptions& options);
Error check_buffer(const void* buffer, int64_t bytes, const char* what);
Error check_count(int64_t count, hvd_dtype_t dtype);
// For a device operation, that the buffer is memory of that device (where CUDA can
// tell). Host operations are not checked: asking CUDA costs a call per tensor.
Error check_placement(const void* buffer, int32_t device, const std::string& name, const char* what);
Error check_shape(int ndim, const int64_t* shape, hvd_dtype_t dtype);
Error check_handle_out(const hvd_handle_t* handle);
// The process set, and that this rank is a member of it.
Error check_process_set(Runtime& rt, int32_t id, std::shared_ptr<ProcessSet>* set);
Error check_device(int32_t device);
// Name given, or the automatic one; refuses names too long to send.
Error resolve_name(Runtime& rt, const char* name, const char* op, std::string* out);

// A grouped call's checks: a positive tensor count and every per-tensor array given
// (named in the message when NULL); *base is the group's resolved name.
struct ArrayArgument {
  const void* pointer;
  const char* name;
};
Error check_group(Runtime& rt, int ntensors, std::initializer_list<ArrayArgument> arrays, const char* op,
                  const char* name, std::string* base);
// Member i of a group is named "<base>.<i>".
std::string group_member_name(const std::string& base, int i);
// Builds each member's request with make_member(i, member name, &request), marks it
// as one of the group's ntensors, and enqueues them all under one handle.
template <class MakeMember>
Error enqueue_group(Runtime& rt, int ntensors, const std::string& base, MakeMember make_member,
                    hvd_handle_t* handle) {
  std::vector<Request> requests(static_cast<size_t>(ntensors));
  for (int i = 0; i < ntensors; ++i) {
    Error err = make_member(i, group_member_name(base, i), &requests[static_cast<size_t>(i)]);
    if (!err.ok()) return err;
    requests[static_cast<size_t>(i)].spec.group_size = ntensors;
  }
  return enqueue(rt, std::move(requests), handle);
}

// Common checks of every tensor operation: the runtime, the options, the process set.
Error begin(const char* function, const hvd_op_options_t* options, std::shared_ptr<Runtime>* rt,
            OpOptions* opts, std::shared_ptr<ProcessSet>* set);
// The request skeleton: name, op, dtype and the options' fields.
Request make_request(std::string name, const OpOptions& opts, OpType op, hvd_dtype_t dtype);

// Exported functions end in one of these: a status, with last_error set on failure.
hvd_status_t finish(const Error& error);

}  // namespace hvd

// Runs body, turning any C++ exception into HVD_ERR_INTERNAL / HVD_ERR_NO_MEMORY:
// nothing throws across the ABI.
#define HVD_API_GUARD(body)                                                              \
  try {                                                                                  \
    body                                                                                 \
  } catch (const std::bad_alloc&) {                                                      \
    return ::hvd::fail(HVD_ERR_NO_MEMORY, "out of memory in %s", __func__);              \
  } catch (const std::exception& e) {                                                    \
    return ::hvd::fail(HVD_ERR_INTERNAL, "internal error in %s: %s", __func__, e.what()); \
  } catch (...) {                                                                        \
    return ::hvd::fail(HVD_ERR_INTERNAL, "internal error in %s", __func__);              \
  }

// Returns from the exported function with the error's status if expr failed.
#define HVD_TRY(expr)                          \
  do {                                         \
    ::hvd::Error hvd_try_error_ = (expr);      \
    if (!hvd_try_error_.ok()) return ::hvd::fail(hvd_try_error_); \
  } while (0)
