// Argument checks shared by the exported functions. Each returns an Error that says
// which argument was wrong and what is accepted.
#pragma once

#include <exception>
#include <initializer_list>
#include <memory>
#include <string>

#include "base/error.h"
#include "runtime/enqueue.h"
#include "queue/process_sets.h"
#include "queue/request.h"
#include "runtime/runtime.h"

namespace hvd {

// The tensor's shape from the options (allreduce, broadcast); ndim 0: not given.
struct OptionsShape {
  const int64_t* dims = nullptr;
  int32_t ndim = 0;
};

struct OpOptions {
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t device = HVD_DEVICE_CPU;
  int32_t process_set = 0;
  void* stream = nullptr;
  hvd_allocator_fn allocator = nullptr;
  void* allocator_data = nullptr;
  OptionsShape shape;
};

// The runtime, or HVD_ERR_NOT_INITIALIZED naming the function.
Error require_runtime(const char* function, std::shared_ptr<Runtime>* rt);
// A blocking call made through its _async form returns that form's status; a refusal
// for want of a runtime is told again under the name the caller used ("hvd_allreduce
// called before hvd_init", not "hvd_allreduce_async called ...").
hvd_status_t as_blocking_call(hvd_status_t status, const char* function);

Error read_options(const hvd_op_options_t* options, OpOptions* out);
Error check_dtype(hvd_dtype_t dtype);
// That op is an hvd_reduce_op_t. Whether it suits the dtype and the scale factors is
// decided in negotiation (reduction_error), on every rank alike.
Error check_reduce_op(hvd_reduce_op_t op);
Error check_buffer(const void* buffer, int64_t bytes, const char* what);
Error check_count(int64_t count, hvd_dtype_t dtype);
// For a device operation, that the buffer is memory of that device (where CUDA can
// tell). Host operations are not checked: asking CUDA costs a call per tensor.
Error check_placement(const void* buffer, int32_t device, const std::string& name, const char* what);
// scalar_ok: ndim 0 passes here (shape may then be NULL); negotiation refuses it on
// every rank, or reports the ranks that disagree on the number of dimensions.
Error check_shape(int ndim, const int64_t* shape, hvd_dtype_t dtype, bool scalar_ok = false);
Error check_handle_out(const hvd_handle_t* handle);
// A shape given in the options must have count elements.
Error check_options_shape(const OptionsShape& shape, int64_t count);
// The spec's shape: the options' when given (negotiated and compared), else {count}.
void set_counted_shape(const OptionsShape& shape, int64_t count, TensorSpec* spec);
// The process set, and that this rank is a member of it.
Error check_process_set(Runtime& rt, int32_t id, std::shared_ptr<ProcessSet>* set);
Error check_device(int32_t device);
// A broadcast root: a global rank that is a member of the set (as Horovod's root_rank).
Error check_root(int root_rank, const ProcessSet& set);
// Name given, or the automatic one (counted per process set); refuses names too long
// to send.
Error resolve_name(Runtime& rt, const char* name, const char* op, int32_t process_set,
                   std::string* out);

// Made after begin() succeeded: the process set's other ranks made (or will make) the
// same call and would wait for this rank's tensor for ever if a later check refused
// it here. Unless accept()ed just before the call is queued, the destructor announces
// the refusal with the refusing error's message (hvd_last_error's), and the tensor
// fails on every rank with it (queue/request.h: Refusal). A call rejected when it is
// queued (a duplicate name, shut down) is no refusal: the name's call is in flight,
// or nothing is.
class RefusalNotice {
 public:
  RefusalNotice(Runtime& rt, OpType op, const std::string& name, int32_t process_set)
      : rt_(rt), op_(op), name_(name), process_set_(process_set),
        exceptions_(std::uncaught_exceptions()) {}
  RefusalNotice(const RefusalNotice&) = delete;
  RefusalNotice& operator=(const RefusalNotice&) = delete;
  ~RefusalNotice();
  // The refusal is announced under the name with every byte that is not UTF-8
  // replaced by U+FFFD (base/utf8.h): a peer that called with that text hears of it.
  // The message the peers see, where the refusal is not this call's last error
  // (hvd_refuse: the binding's).
  void reason(const char* text) { reason_ = text; }
  // A grouped call named its base: each member "<base>.<i>" is refused.
  void group(int ntensors) {
    grouped_ = true;
    group_size_ = ntensors;
  }
  void accept() { accepted_ = true; }

 private:
  Runtime& rt_;
  OpType op_;
  const std::string& name_;  // the caller's resolved name, unmoved until accept()
  int32_t process_set_;
  int exceptions_;
  const char* reason_ = nullptr;
  bool grouped_ = false;
  int group_size_ = 0;
  bool accepted_ = false;
};

// A grouped call's checks: a positive tensor count and every per-tensor array given
// (named in the message when NULL).
struct ArrayArgument {
  const void* pointer;
  const char* name;
};
Error check_group(int ntensors, std::initializer_list<ArrayArgument> arrays, const char* op);
// A tensor name is UTF-8 text (base/utf8.h): the message names the first bad byte's
// offset. Checked once the call's RefusalNotice exists, so the peers hear of it.
Error check_name_text(const std::string& name);
// A group's outputs lie apart: two members that write the same memory (one tensor given
// twice, overlapping views) would have it reduced twice, or one member's result written
// over another's, silently wrong. counts[i]: the elements member i writes; members whose
// count is invalid (or 0) are left to their own checks. harm: what would go wrong, and
// what to do, for the message.
Error check_outputs_apart(int ntensors, void* const* recvbufs, const int64_t* counts,
                          hvd_dtype_t dtype, const char* harm);
// Member i of a group is named "<base>.<i>".
std::string group_member_name(const std::string& base, int i);
// Builds each member's request with make_member(i, member name, &request), marks it
// as one of the group's ntensors, and enqueues them all under one handle.
// The notice is accepted once every member passed its checks.
template <class MakeMember>
Error enqueue_group(Runtime& rt, int ntensors, const std::string& base, MakeMember make_member,
                    hvd_handle_t* handle, RefusalNotice* notice) {
  std::vector<Request> requests(static_cast<size_t>(ntensors));
  for (int i = 0; i < ntensors; ++i) {
    Error err = make_member(i, group_member_name(base, i), &requests[static_cast<size_t>(i)]);
    if (!err.ok()) return err;
    requests[static_cast<size_t>(i)].spec.group_size = ntensors;
  }
  notice->accept();
  return enqueue(rt, std::move(requests), handle);
}

// Common steps of every tensor operation: the runtime, then the name (op is the
// automatic name's prefix), then the options and the process set. The automatic name
// is taken before anything can refuse the call, so that the per-process counter
// advances on every rank alike whatever the call's fate here: a call refused on one
// rank leaves later unnamed calls matched across ranks.
struct Call {
  const char* function;  // for messages: "hvd_allreduce_async"
  const char* op;        // automatic names: "<op>.noname.<n>"
  const char* name;      // the caller's, or NULL
};
Error begin(const Call& call, const hvd_op_options_t* options, std::shared_ptr<Runtime>* rt,
            OpOptions* opts, std::shared_ptr<ProcessSet>* set, std::string* resolved);
// The request skeleton: name, op, dtype and the options' fields.
Request make_request(std::string name, const OpOptions& opts, OpType op, hvd_dtype_t dtype);
// The same into a default-constructed request (no temporary to move and destroy).
void fill_request(Request* r, std::string name, const OpOptions& opts, OpType op,
                  hvd_dtype_t dtype);
// The spec's part of that: op, dtype and the options' device, process set and scales.
void fill_spec(TensorSpec* spec, const OpOptions& opts, OpType op, hvd_dtype_t dtype);

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
