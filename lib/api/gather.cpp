// Exported: allgather, alltoall and reducescatter (tensors with a shape; rows along
// the first dimension).
#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "api/validate.h"
#include "base/dtype.h"
#include "runtime/enqueue.h"
#include "hvd/hvd.h"

using namespace hvd;

namespace {

int64_t elements_of(int ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

Error check_output_pointers(void** recvbuf, int64_t* recv_dim0) {
  if (!recvbuf) return make_error(HVD_ERR_INVALID_ARGUMENT, "recvbuf (the output pointer) is NULL");
  if (!recv_dim0)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "recv_dim0 (the output pointer) is NULL");
  return Error::success();
}

// The request of a shaped tensor: dtype, shape and buffer checked.
Error shaped_request(OpType op, const void* sendbuf, int ndim, const int64_t* shape,
                     hvd_dtype_t dtype, const std::string& name, const OpOptions& opts, Request* out) {
  Error err = check_dtype(dtype);
  // A scalar is no tensor of rows; but a rank that passes one where the others pass
  // rows must see a mismatch on every rank, so allgather and reducescatter leave the
  // verdict to negotiation. Alltoall needs shape[0] here, for its splits.
  if (err.ok()) err = check_shape(ndim, shape, dtype, op != OpType::Alltoall);
  if (!err.ok()) return err;
  const int64_t bytes = elements_of(ndim, shape) * static_cast<int64_t>(dtype_size(dtype));
  if (!(err = check_buffer(sendbuf, bytes, "sendbuf")).ok()) return err;
  if (!(err = check_placement(sendbuf, opts.device, name, "sendbuf")).ok()) return err;
  *out = make_request(name, opts, op, dtype);
  out->spec.shape.assign(shape, shape + ndim);
  out->send = sendbuf;
  return Error::success();
}

Error scaling_is_neutral(const OpOptions& opts, const char* op) {
  if (opts.prescale != 1.0 || opts.postscale != 1.0)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "prescale/postscale factors apply to reductions, not to %s", op);
  return Error::success();
}

// handle by pointer: it is read only after the enqueue call has filled it.
// function: the blocking call's name, for a refusal before init.
hvd_status_t wait_for(hvd_status_t enqueued, const hvd_handle_t* handle, const char* function) {
  return enqueued == HVD_SUCCESS ? hvd_wait(*handle) : as_blocking_call(enqueued, function);
}

Error allgather_request(const void* sendbuf, int ndim, const int64_t* shape,
                        hvd_dtype_t dtype, void** recvbuf, int64_t* recv_dim0,
                        int64_t* recv_dim0_per_rank, const std::string& name, const OpOptions& opts,
                        Request* out) {
  Error err = check_output_pointers(recvbuf, recv_dim0);
  if (err.ok()) err = scaling_is_neutral(opts, "allgather");
  if (err.ok()) err = shaped_request(OpType::Allgather, sendbuf, ndim, shape, dtype, name, opts, out);
  if (!err.ok()) return err;
  out->out_buffer = recvbuf;
  out->out_dim0 = recv_dim0;
  out->out_per_rank = recv_dim0_per_rank;
  return Error::success();
}

// The elements of this rank's block of a reducescatter of the given shape; -1 where
// the shape is not a valid one (no dimensions, a negative one, too many elements).
int64_t block_elements(const ProcessSet& set, int ndim, const int64_t* shape) {
  if (ndim < 1 || !shape || shape[0] < 0) return -1;
  int64_t row = 1;
  for (int d = 1; d < ndim; ++d) {
    if (shape[d] < 0 || (shape[d] > 0 && row > INT64_MAX / shape[d])) return -1;
    row *= shape[d];
  }
  const int64_t rows = hvd_reducescatter_rows(shape[0], set.my_set_rank, set.size());
  if (rows < 0 || (rows > 0 && row > INT64_MAX / rows)) return -1;
  return rows * row;
}

Error reducescatter_request(const ProcessSet& set, const void* sendbuf, void* recvbuf,
                            int ndim, const int64_t* shape, hvd_dtype_t dtype, hvd_reduce_op_t op,
                            const std::string& name, const OpOptions& opts, Request* out) {
  Error err = check_reduce_op(op);
  if (!err.ok()) return err;
  if (!(err = shaped_request(OpType::Reducescatter, sendbuf, ndim, shape, dtype, name, opts, out)).ok())
    return err;
  out->spec.reduce_op = op;
  if (ndim == 0) return Error::success();  // refused in negotiation; recvbuf never used
  const int64_t mine = block_elements(set, ndim, shape);  // the shape was checked above
  if (!(err = check_buffer(recvbuf, mine * static_cast<int64_t>(dtype_size(dtype)), "recvbuf")).ok())
    return err;
  if (!(err = check_placement(recvbuf, opts.device, out->name, "recvbuf")).ok()) return err;
  out->recv = recvbuf;
  return Error::success();
}

// The elements each member of a grouped reducescatter writes on this rank; 0 for a
// member whose shape is invalid (its own request refuses it).
std::vector<int64_t> received_counts(const ProcessSet& set, int ntensors, const int* ndims,
                                     const int64_t* const* shapes) {
  std::vector<int64_t> counts(static_cast<size_t>(ntensors), 0);
  for (int i = 0; i < ntensors; ++i)
    counts[static_cast<size_t>(i)] = std::max<int64_t>(0, block_elements(set, ndims[i], shapes[i]));
  return counts;
}

}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_allgather_async(const void* sendbuf, int ndim, const int64_t* shape,
                                         hvd_dtype_t dtype, void** recvbuf, int64_t* recv_dim0,
                                         int64_t* recv_dim0_per_rank, const char* name,
                                         const hvd_op_options_t* options, hvd_handle_t* handle) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    OpOptions opts;
    std::shared_ptr<ProcessSet> set;
    std::string resolved;
    HVD_TRY(begin({"hvd_allgather_async", "allgather", name}, options, &rt, &opts, &set, &resolved));
    RefusalNotice notice(*rt, OpType::Allgather, resolved, opts.process_set);
    HVD_TRY(check_name_text(resolved));
    HVD_TRY(check_handle_out(handle));
    std::vector<Request> requests(1);
    HVD_TRY(allgather_request(sendbuf, ndim, shape, dtype, recvbuf, recv_dim0, recv_dim0_per_rank,
                              resolved, opts, &requests[0]));
    notice.accept();
    return finish(enqueue(*rt, std::move(requests), handle));
  })
}

HVD_API hvd_status_t hvd_allgather(const void* sendbuf, int ndim, const int64_t* shape,
                                   hvd_dtype_t dtype, void** recvbuf, int64_t* recv_dim0,
                                   int64_t* recv_dim0_per_rank, const char* name,
                                   const hvd_op_options_t* options) {
  HVD_API_GUARD({
    hvd_handle_t handle = 0;
    return wait_for(hvd_allgather_async(sendbuf, ndim, shape, dtype, recvbuf, recv_dim0,
                                        recv_dim0_per_rank, name, options, &handle),
                    &handle, "hvd_allgather");
  })
}

HVD_API hvd_status_t hvd_alltoall_async(const void* sendbuf, int ndim, const int64_t* shape,
                                        hvd_dtype_t dtype, const int64_t* send_splits,
                                        void** recvbuf, int64_t* recv_dim0, int64_t* recv_splits,
                                        const char* name, const hvd_op_options_t* options,
                                        hvd_handle_t* handle) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    OpOptions opts;
    std::shared_ptr<ProcessSet> set;
    std::string resolved;
    HVD_TRY(begin({"hvd_alltoall_async", "alltoall", name}, options, &rt, &opts, &set, &resolved));
    RefusalNotice notice(*rt, OpType::Alltoall, resolved, opts.process_set);
    HVD_TRY(check_name_text(resolved));
    HVD_TRY(check_handle_out(handle));
    HVD_TRY(check_output_pointers(recvbuf, recv_dim0));
    HVD_TRY(scaling_is_neutral(opts, "alltoall"));
    std::vector<Request> requests(1);
    Request& r = requests[0];
    HVD_TRY(shaped_request(OpType::Alltoall, sendbuf, ndim, shape, dtype, resolved, opts, &r));
    const int size = set->size();
    if (send_splits) {
      for (int q = 0; q < size; ++q)  // named first: a negative split explains the sums
        if (send_splits[q] < 0)
          return fail(HVD_ERR_INVALID_ARGUMENT, "send_splits[%d] is %lld; splits must be >= 0", q,
                      static_cast<long long>(send_splits[q]));
      int64_t total = 0;
      for (int q = 0; q < size; ++q) {
        // total <= shape[0] holds throughout, so the sum cannot overflow.
        if (send_splits[q] > shape[0] - total)
          return fail(HVD_ERR_INVALID_ARGUMENT,
                      "send_splits[0..%d] sum to more than shape[0] (%lld rows)", q,
                      static_cast<long long>(shape[0]));
        total += send_splits[q];
      }
      if (total != shape[0])
        return fail(HVD_ERR_INVALID_ARGUMENT,
                    "send_splits sum to %lld rows but shape[0] is %lld; they must be equal "
                    "(send_splits has one entry per rank of the process set: %d)",
                    static_cast<long long>(total), static_cast<long long>(shape[0]), size);
      r.spec.splits.assign(send_splits, send_splits + size);
    } else {
      if (shape[0] % size != 0)
        return fail(HVD_ERR_INVALID_ARGUMENT,
                    "shape[0] is %lld, not divisible by the %d ranks of the process set; pass "
                    "send_splits to split the rows unevenly",
                    static_cast<long long>(shape[0]), size);
      r.spec.splits.assign(static_cast<size_t>(size), shape[0] / size);
    }
    r.out_buffer = recvbuf;
    r.out_dim0 = recv_dim0;
    r.out_per_rank = recv_splits;
    notice.accept();
    return finish(enqueue(*rt, std::move(requests), handle));
  })
}

HVD_API hvd_status_t hvd_alltoall(const void* sendbuf, int ndim, const int64_t* shape,
                                  hvd_dtype_t dtype, const int64_t* send_splits, void** recvbuf,
                                  int64_t* recv_dim0, int64_t* recv_splits, const char* name,
                                  const hvd_op_options_t* options) {
  HVD_API_GUARD({
    hvd_handle_t handle = 0;
    return wait_for(hvd_alltoall_async(sendbuf, ndim, shape, dtype, send_splits, recvbuf,
                                       recv_dim0, recv_splits, name, options, &handle),
                    &handle, "hvd_alltoall");
  })
}

HVD_API hvd_status_t hvd_reducescatter_async(const void* sendbuf, void* recvbuf, int ndim,
                                             const int64_t* shape, hvd_dtype_t dtype,
                                             hvd_reduce_op_t op, const char* name,
                                             const hvd_op_options_t* options,
                                             hvd_handle_t* handle) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    OpOptions opts;
    std::shared_ptr<ProcessSet> set;
    std::string resolved;
    HVD_TRY(begin({"hvd_reducescatter_async", "reducescatter", name}, options, &rt, &opts, &set, &resolved));
    RefusalNotice notice(*rt, OpType::Reducescatter, resolved, opts.process_set);
    HVD_TRY(check_name_text(resolved));
    HVD_TRY(check_handle_out(handle));
    std::vector<Request> requests(1);
    HVD_TRY(reducescatter_request(*set, sendbuf, recvbuf, ndim, shape, dtype, op, resolved, opts,
                                  &requests[0]));
    notice.accept();
    return finish(enqueue(*rt, std::move(requests), handle));
  })
}

HVD_API hvd_status_t hvd_reducescatter(const void* sendbuf, void* recvbuf, int ndim,
                                       const int64_t* shape, hvd_dtype_t dtype, hvd_reduce_op_t op,
                                       const char* name, const hvd_op_options_t* options) {
  HVD_API_GUARD({
    hvd_handle_t handle = 0;
    return wait_for(hvd_reducescatter_async(sendbuf, recvbuf, ndim, shape, dtype, op, name,
                                            options, &handle),
                    &handle, "hvd_reducescatter");
  })
}

HVD_API hvd_status_t hvd_grouped_allgather_async(int ntensors, const void* const* sendbufs,
                                                 const int* ndims, const int64_t* const* shapes,
                                                 hvd_dtype_t dtype, void** recvbufs,
                                                 int64_t* recv_dim0s, int64_t* recv_dim0_per_rank,
                                                 const char* name, const hvd_op_options_t* options,
                                                 hvd_handle_t* handle) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    OpOptions opts;
    std::shared_ptr<ProcessSet> set;
    std::string base;
    HVD_TRY(begin({"hvd_grouped_allgather_async", "grouped_allgather", name}, options, &rt, &opts, &set,
                  &base));
    RefusalNotice notice(*rt, OpType::Allgather, base, opts.process_set);
    notice.group(ntensors);
    HVD_TRY(check_name_text(base));
    HVD_TRY(check_handle_out(handle));
    HVD_TRY(check_group(ntensors,
                        {{sendbufs, "sendbufs"}, {ndims, "ndims"}, {shapes, "shapes"},
                         {recvbufs, "recvbufs"}, {recv_dim0s, "recv_dim0s"}},
                        "grouped_allgather"));
    HVD_TRY(check_dtype(dtype));  // before the lambda copies it (hvd_grouped_allreduce_async)
    return finish(enqueue_group(
        *rt, ntensors, base,
        [&, dtype](int i, const std::string& member, Request* request) {
          int64_t* per_rank = recv_dim0_per_rank ? recv_dim0_per_rank + static_cast<size_t>(i) * set->size() : nullptr;
          return allgather_request(sendbufs[i], ndims[i], shapes[i], dtype, &recvbufs[i], &recv_dim0s[i],
                                   per_rank, member, opts, request);
        },
        handle, &notice));
  })
}

HVD_API hvd_status_t hvd_grouped_allgather(int ntensors, const void* const* sendbufs, const int* ndims,
                                           const int64_t* const* shapes, hvd_dtype_t dtype,
                                           void** recvbufs, int64_t* recv_dim0s,
                                           int64_t* recv_dim0_per_rank, const char* name,
                                           const hvd_op_options_t* options) {
  HVD_API_GUARD({
    hvd_handle_t handle = 0;
    return wait_for(hvd_grouped_allgather_async(ntensors, sendbufs, ndims, shapes, dtype, recvbufs,
                                                recv_dim0s, recv_dim0_per_rank, name, options, &handle),
                    &handle, "hvd_grouped_allgather");
  })
}

HVD_API hvd_status_t hvd_grouped_reducescatter_async(int ntensors, const void* const* sendbufs,
                                                     void* const* recvbufs, const int* ndims,
                                                     const int64_t* const* shapes, hvd_dtype_t dtype,
                                                     hvd_reduce_op_t op, const char* name,
                                                     const hvd_op_options_t* options,
                                                     hvd_handle_t* handle) {
  HVD_API_GUARD({
    std::shared_ptr<Runtime> rt;
    OpOptions opts;
    std::shared_ptr<ProcessSet> set;
    std::string base;
    HVD_TRY(begin({"hvd_grouped_reducescatter_async", "grouped_reducescatter", name}, options, &rt, &opts,
                  &set, &base));
    RefusalNotice notice(*rt, OpType::Reducescatter, base, opts.process_set);
    notice.group(ntensors);
    HVD_TRY(check_name_text(base));
    HVD_TRY(check_handle_out(handle));
    HVD_TRY(check_group(ntensors,
                        {{sendbufs, "sendbufs"}, {recvbufs, "recvbufs"}, {ndims, "ndims"}, {shapes, "shapes"}},
                        "grouped_reducescatter"));
    HVD_TRY(check_reduce_op(op));  // before the lambda copies them (hvd_grouped_allreduce_async)
    HVD_TRY(check_dtype(dtype));
    HVD_TRY(check_outputs_apart(ntensors, recvbufs,
                                received_counts(*set, ntensors, ndims, shapes).data(), dtype,
                                "one member's block would be written over another's; give "
                                "each member an output of its own"));
    return finish(enqueue_group(
        *rt, ntensors, base,
        [&, dtype, op](int i, const std::string& member, Request* request) {
          return reducescatter_request(*set, sendbufs[i], recvbufs[i], ndims[i], shapes[i], dtype, op,
                                       member, opts, request);
        },
        handle, &notice));
  })
}

HVD_API hvd_status_t hvd_grouped_reducescatter(int ntensors, const void* const* sendbufs,
                                               void* const* recvbufs, const int* ndims,
                                               const int64_t* const* shapes, hvd_dtype_t dtype,
                                               hvd_reduce_op_t op, const char* name,
                                               const hvd_op_options_t* options) {
  HVD_API_GUARD({
    hvd_handle_t handle = 0;
    return wait_for(hvd_grouped_reducescatter_async(ntensors, sendbufs, recvbufs, ndims, shapes, dtype,
                                                    op, name, options, &handle),
                    &handle, "hvd_grouped_reducescatter");
  })
}

}  // extern "C"
