// Exported: the collectives, handles and synchronization.
#include <cstring>
#include <thread>

#include "api/validate.h"
#include "base/dtype.h"
#include "runtime/enqueue.h"
#include "queue/name_table.h"
#include "negotiate/wire.h"
#include "hvd/hvd.h"

using namespace hvd;

namespace {

// shape: the options' shape when it describes this tensor (ndim 0 otherwise).
Error allreduce_request(const void* sendbuf, void* recvbuf, int64_t count, hvd_dtype_t dtype,
                        hvd_reduce_op_t op, std::string&& name, const OpOptions& opts,
                        const OptionsShape& shape, Request* out) {
  // Early returns: each check's Error is made in place and dropped, never assigned
  // over another (a string move per check was a measurable share of a small tensor's
  // cost).
  HVD_RETURN_IF_ERROR(check_dtype(dtype));
  HVD_RETURN_IF_ERROR(check_reduce_op(op));
  HVD_RETURN_IF_ERROR(check_count(count, dtype));
  HVD_RETURN_IF_ERROR(check_options_shape(shape, count));
  const int64_t bytes = count * static_cast<int64_t>(dtype_size(dtype));
  HVD_RETURN_IF_ERROR(check_buffer(sendbuf, bytes, "sendbuf"));
  HVD_RETURN_IF_ERROR(check_buffer(recvbuf, bytes, "recvbuf"));
  HVD_RETURN_IF_ERROR(check_placement(sendbuf, opts.device, name, "sendbuf"));
  HVD_RETURN_IF_ERROR(check_placement(recvbuf, opts.device, name, "recvbuf"));
  fill_request(out, std::move(name), opts, OpType::Allreduce, dtype);  // *out is fresh
  out->spec.reduce_op = op;
  set_counted_shape(shape, count, &out->spec);
  out->send = sendbuf;
  out->recv = recvbuf;
  return Error::success();
}

// A training loop's steady state: the call repeats the last allreduce under its name
// with the same arguments (TensorQueue::push_repeat), so it passed every check of the
// path below then and passes them again; only its buffers are new. It is queued
// without building a request or a spec, or taking the process set. Anything else, and
// every call that would fail, returns false and takes the checked path, which reports
// it.
bool enqueue_repeated_allreduce(const void* sendbuf, void* recvbuf, int64_t count,
                                hvd_dtype_t dtype, hvd_reduce_op_t op, const char* name,
                                const hvd_op_options_t* options, hvd_handle_t* handle) {
  if (!name || !handle || (count > 0 && (!sendbuf || !recvbuf))) return false;
  const size_t length = strnlen(name, kMaxNameBytes + 1);
  if (length > kMaxNameBytes) return false;
  OpOptions opts;
  if (!read_options(options, &opts).ok()) return false;
  // A call that is not plain (NameTable::plain: device memory, a process set, a stream)
  // never repeats: it goes to the checked path without the queue's lock and a handle
  // made for nothing.
  if (!NameTable::plain_placement(opts.device, opts.process_set, opts.stream, opts.allocator))
    return false;
  RepeatCall call;
  call.dtype = dtype;
  call.op = op;
  call.count = count;
  call.prescale = opts.prescale;
  call.postscale = opts.postscale;
  call.shape = opts.shape.dims;
  call.ndim = opts.shape.ndim;
  std::shared_ptr<Runtime> rt = current_runtime();
  if (!rt) return false;
  return enqueue_repeat(*rt, std::string_view(name, length), call, sendbuf, recvbuf, handle);
}

// An unknown handle before init is a call out of order; after init, a bad handle.
Error unknown_handle(const char* function, hvd_handle_t handle) {
  if (!current_runtime())
    return make_error(HVD_ERR_NOT_INITIALIZED,
                      "%s called with unknown handle %lld before hvd_init", function,
                      static_cast<long long>(handle));
  return make_error(HVD_ERR_INVALID_ARGUMENT,
                    "unknown handle %lld: it was never returned by libhvd, or was already "
                    "waited for",
                    static_cast<long long>(handle));
}

// A thread that polls the same unfinished operation again within microseconds spins
// on it: it yields its core, which the thread that completes the operation (the
// background thread, a peer rank on this core) needs. A tight poll loop on 2 cores
// took 1.9-11 ms per small allreduce at 2 ranks without, 0.1 ms with (hvd_wait: 12 us).
// Other polls do not yield: the Python binding polls dropped handles on every enqueue,
// and a yield there handed the core away for a whole time slice each time (a test of
// 2,000 dropped handles took 46 s against 1.5 s).
void yield_if_spinning(hvd_handle_t handle) {
  thread_local hvd_handle_t last_handle = 0;
  thread_local int64_t last_poll_end_ns = 0;
  int64_t now = monotonic_ns();
  if (handle == last_handle && now - last_poll_end_ns < 2000) {
    std::this_thread::yield();
    now = monotonic_ns();  // the poll ends after the yield
  }
  last_handle = handle;
  last_poll_end_ns = now;
}

}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_allreduce_async(const void* sendbuf, void* recvbuf, int64_t count,
                                         hvd_dtype_t dtype, hvd_reduce_op_t op,
                                         const char* name, const hvd_op_options_t* options,
                                         hvd_handle_t* handle) {
  HVD_API_GUARD({
    if (enqueue_repeated_allreduce(sendbuf, recvbuf, count, dtype, op, name, options, handle))
      return HVD_SUCCESS;
    std::shared_ptr<Runtime> rt;
    OpOptions opts;
    std::shared_ptr<ProcessSet> set;
    std::string resolved;
    HVD_TRY(begin({"hvd_allreduce_async", "allreduce", name}, options, &rt, &opts, &set, &resolved));
    RefusalNotice notice(*rt, OpType::Allreduce, resolved, opts.process_set);
    HVD_TRY(check_name_text(resolved));
    HVD_TRY(check_handle_out(handle));
    Request request;
    HVD_TRY(allreduce_request(sendbuf, recvbuf, count, dtype, op, std::move(resolved), opts,
                              opts.shape, &request));
    notice.accept();
    return finish(enqueue(*rt, std::move(request), handle));
  })
}

HVD_API hvd_status_t hvd_allreduce(const void* sendbuf, void* recvbuf, int64_t count,
                                   hvd_dtype_t dtype, hvd_reduce_op_t op, const char* name) {
  HVD_API_GUARD({
    hvd_handle_t handle;
    hvd_status_t status =
        hvd_allreduce_async(sendbuf, recvbuf, count, dtype, op, name, nullptr, &handle);
    if (status != HVD_SUCCESS) return as_blocking_call(status, "hvd_allreduce");
    return hvd_wait(handle);
  })
}

HVD_API hvd_status_t hvd_grouped_allreduce_async(int ntensors, const void* const* sendbufs,
                                                 void* const* recvbufs, const int64_t* counts,
                                                 hvd_dtype_t dtype, hvd_reduce_op_t op,
                                                 const char* name,
                                                 const hvd_op_options_t* options,
                                                 hvd_handle_t* handle) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    OpOptions opts;
    std::shared_ptr<ProcessSet> set;
    std::string base;
    HVD_TRY(begin({"hvd_grouped_allreduce_async", "grouped_allreduce", name}, options, &rt, &opts, &set,
                  &base));
    RefusalNotice notice(*rt, OpType::Allreduce, base, opts.process_set);
    notice.group(ntensors);
    HVD_TRY(check_name_text(base));
    HVD_TRY(check_handle_out(handle));
    HVD_TRY(check_group(ntensors, {{sendbufs, "sendbufs"}, {recvbufs, "recvbufs"}, {counts, "counts"}},
                        "grouped_allreduce"));
    // One shape in the options describes one tensor: a group of one.
    if (opts.shape.ndim > 0 && ntensors > 1)
      return fail(HVD_ERR_INVALID_ARGUMENT,
                  "options->shape describes one tensor, but the group has %d; leave ndim 0 for "
                  "a group of several tensors (their counts are compared)",
                  ntensors);
    // The enums are checked here, while they are still the call's values, and the
    // lambda gets copies: a C caller may pass any int, and reading an enum object that
    // holds a value outside its enumerators is undefined in C++ (UBSan's enum check).
    HVD_TRY(check_dtype(dtype));
    HVD_TRY(check_reduce_op(op));
    HVD_TRY(check_outputs_apart(ntensors, recvbufs, counts, dtype,
                                "it would be reduced twice; give each tensor once"));
    return finish(enqueue_group(
        *rt, ntensors, base,
        [&, dtype, op](int i, std::string&& member, Request* request) {
          return allreduce_request(sendbufs[i], recvbufs[i], counts[i], dtype, op, std::move(member), opts,
                                   opts.shape, request);
        },
        handle, &notice));
  })
}

HVD_API hvd_status_t hvd_grouped_allreduce(int ntensors, const void* const* sendbufs,
                                           void* const* recvbufs, const int64_t* counts,
                                           hvd_dtype_t dtype, hvd_reduce_op_t op,
                                           const char* name, const hvd_op_options_t* options) {
  HVD_API_GUARD({
    hvd_handle_t handle;
    hvd_status_t status = hvd_grouped_allreduce_async(ntensors, sendbufs, recvbufs, counts, dtype,
                                                      op, name, options, &handle);
    if (status != HVD_SUCCESS) return as_blocking_call(status, "hvd_grouped_allreduce");
    return hvd_wait(handle);
  })
}

HVD_API hvd_status_t hvd_broadcast_async(void* buffer, int64_t count, hvd_dtype_t dtype,
                                         int root_rank, const char* name,
                                         const hvd_op_options_t* options,
                                         hvd_handle_t* handle) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    OpOptions opts;
    std::shared_ptr<ProcessSet> set;
    std::string resolved;
    HVD_TRY(begin({"hvd_broadcast_async", "broadcast", name}, options, &rt, &opts, &set, &resolved));
    RefusalNotice notice(*rt, OpType::Broadcast, resolved, opts.process_set);
    HVD_TRY(check_name_text(resolved));
    HVD_TRY(check_handle_out(handle));
    HVD_TRY(check_dtype(dtype));
    HVD_TRY(check_count(count, dtype));
    HVD_TRY(check_options_shape(opts.shape, count));
    HVD_TRY(check_buffer(buffer, count * static_cast<int64_t>(dtype_size(dtype)), "buffer"));
    HVD_TRY(check_root(root_rank, *set));
    HVD_TRY(check_placement(buffer, opts.device, resolved, "buffer"));
    notice.accept();
    std::vector<Request> requests(1);
    Request& r = requests[0];
    r = make_request(std::move(resolved), opts, OpType::Broadcast, dtype);
    // Scale factors mean nothing to a broadcast; they are not negotiated.
    r.spec.prescale = r.spec.postscale = 1.0;
    r.spec.root = root_rank;
    set_counted_shape(opts.shape, count, &r.spec);
    r.send = buffer;
    r.recv = buffer;
    return finish(enqueue(*rt, std::move(requests), handle));
  })
}

HVD_API hvd_status_t hvd_broadcast(void* buffer, int64_t count, hvd_dtype_t dtype, int root_rank,
                                   const char* name) {
  HVD_API_GUARD({
    hvd_handle_t handle;
    hvd_status_t status =
        hvd_broadcast_async(buffer, count, dtype, root_rank, name, nullptr, &handle);
    if (status != HVD_SUCCESS) return as_blocking_call(status, "hvd_broadcast");
    return hvd_wait(handle);
  })
}

HVD_API hvd_status_t hvd_poll(hvd_handle_t handle, int* done) {
  HVD_API_GUARD({
    if (!done) return fail(HVD_ERR_INVALID_ARGUMENT, "done (the output pointer) is NULL");
    auto state = handle_table().find(handle);
    if (!state) return fail(unknown_handle("hvd_poll", handle));
    *done = state->done() ? 1 : 0;
    if (!*done) yield_if_spinning(handle);
    return HVD_SUCCESS;
  })
}

HVD_API hvd_status_t hvd_wait(hvd_handle_t handle) {
  HVD_API_GUARD({
    auto state = handle_table().take(handle);
    if (!state) return fail(unknown_handle("hvd_wait", handle));
    hurry(*state.get());
    wait_counted(*state.get(), kWaitSpinUs);
    if (!state->failed()) return HVD_SUCCESS;  // no Error to build: most waits
    return fail(state->result());
  })
}

HVD_API hvd_status_t hvd_stream_wait(hvd_handle_t handle, void* stream) {
  HVD_API_GUARD({
    auto state = handle_table().find(handle);
    if (!state) return fail(unknown_handle("hvd_stream_wait", handle));
    HandleState::StreamWaiter waiter = state->wait_for_device_queue();
    if (waiter) return finish(waiter(stream));
    // Completed without device work (a host operation, or failed before the device).
    wait_counted(*state.get(), 0);
    return finish(state->result());
  })
}

HVD_API int64_t hvd_reducescatter_rows(int64_t dim0, int set_rank, int set_size) {
  if (dim0 < 0 || set_size <= 0 || set_rank < 0 || set_rank >= set_size) return -1;
  return dim0 / set_size + (set_rank < dim0 % set_size ? 1 : 0);
}

}  // extern "C"
