#include "ops/nccl/nccl_backend.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>

#include "base/dtype.h"
#include "ops/nccl/nccl_loader.h"

namespace hvd {

struct NcclBackend::Comm {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int size = 0;
};

namespace {

Error nccl_error(const NcclApi& nccl, ncclResult_t rc, const char* what,
                 ncclComm_t comm = nullptr) {
  const char* detail = nccl.GetLastError(comm);
  return make_error(HVD_ERR_NCCL, "%s failed: %s%s%s", what, nccl.GetErrorString(rc),
                    detail && *detail ? ": " : "", detail ? detail : "");
}

// Calls NCCL through the loaded table api_ (or the one given, in helpers).
#define HVD_NCCL_CHECK_WITH(api, call, comm)                                        \
  do {                                                                              \
    ncclResult_t hvd_nccl_rc_ = (api).call;                                         \
    if (hvd_nccl_rc_ != ncclSuccess) return nccl_error(api, hvd_nccl_rc_, "nccl" #call, comm); \
  } while (0)
#define HVD_NCCL_CHECK(call, comm) HVD_NCCL_CHECK_WITH(*api_, call, comm)

bool nccl_type(hvd_dtype_t dtype, ncclDataType_t* out) {
  switch (dtype) {
    case HVD_UINT8: *out = ncclUint8; return true;
    case HVD_BOOL: *out = ncclUint8; return true;
    case HVD_INT8: *out = ncclInt8; return true;
    case HVD_INT32: *out = ncclInt32; return true;
    case HVD_INT64: *out = ncclInt64; return true;
    case HVD_FLOAT16: *out = ncclFloat16; return true;
    case HVD_BFLOAT16: *out = ncclBfloat16; return true;
    case HVD_FLOAT32: *out = ncclFloat32; return true;
    case HVD_FLOAT64: *out = ncclFloat64; return true;
    case HVD_UINT16:
    case HVD_INT16: return false;
  }
  return false;
}

ncclRedOp_t nccl_op(hvd_reduce_op_t op, hvd_dtype_t dtype) {
  if (dtype == HVD_BOOL)  // on 0/non-0 bytes: min is "all", max is "any"
    return (op == HVD_OP_MIN || op == HVD_OP_PRODUCT) ? ncclMin : ncclMax;
  switch (op) {
    case HVD_OP_MIN: return ncclMin;
    case HVD_OP_MAX: return ncclMax;
    case HVD_OP_PRODUCT: return ncclProd;
    default: return ncclSum;
  }
}

Error check_reduction(hvd_dtype_t dtype, hvd_reduce_op_t op, ncclDataType_t* type) {
  if (!nccl_type(dtype, type))
    return make_error(HVD_ERR_UNSUPPORTED, "NCCL cannot reduce %s tensors", dtype_name(dtype));
  if (op == HVD_OP_ADASUM || op == HVD_OP_AVERAGE)
    return make_error(HVD_ERR_INTERNAL, "%s reaches the NCCL backend unexpanded",
                      reduce_op_name(op));
  return Error::success();
}

cudaStream_t stream_of(DeviceContext* device) { return static_cast<cudaStream_t>(device->stream()); }

// Makes the context's device current for a scope (NCCL calls launch on it).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device) cudaSetDevice(device);
    else previous_ = -1;
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

// Runs ncclGroupStart/End around a scope; end() reports the group's error.
class Group {
 public:
  explicit Group(const NcclApi& nccl) : nccl_(nccl) { started_ = nccl.GroupStart() == ncclSuccess; }
  ~Group() {
    if (started_) nccl_.GroupEnd();
  }
  Error end() {
    started_ = false;
    HVD_NCCL_CHECK_WITH(nccl_, GroupEnd(), nullptr);
    return Error::success();
  }

 private:
  const NcclApi& nccl_;
  bool started_ = false;
};

bool equal_blocks(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
  for (size_t r = 0; r < counts.size(); ++r)
    if (counts[r] != counts[0] || displs[r] != static_cast<int64_t>(r) * counts[0]) return false;
  return true;
}

}  // namespace

NcclBackend::NcclBackend(DeviceContext* device, TrafficCounters* counters,
                         std::string nccl_library)
    : device_(device), counters_(counters), nccl_library_(std::move(nccl_library)) {}

NcclBackend::~NcclBackend() {
  DeviceGuard guard(device_->device());
  device_->synchronize();
  for (auto& [key, c] : comms_)
    if (c->comm) api_->CommDestroy(c->comm);
}

void NcclBackend::abort_all() {
  for (auto& [key, c] : comms_)
    if (c->comm) api_->CommAbort(c->comm);
}

bool NcclBackend::supports(hvd_dtype_t dtype) {
  ncclDataType_t t;
  return nccl_type(dtype, &t);
}

int NcclBackend::version_code() {
  // Asking must not load NCCL (that would pick the NCCL a framework loaded later gets):
  // before one is in the process, the version of the headers libhvd was built with.
  const int in_process = nccl_version_in_process();
  return in_process ? in_process : NCCL_VERSION_CODE;
}

Error NcclBackend::load() {
  if (api_) return Error::success();
  Error err;
  api_ = load_nccl(nccl_library_, &err);
  return api_ ? Error::success() : err;
}

Error NcclBackend::create(int64_t key, MPI_Comm comm, int rank, int size) {
  // Every rank says whether it has NCCL before any waits in NCCL: a rank that could
  // not load it must fail the others too, not leave them in ncclCommInitRank.
  const Error loaded = load();
  int ready = loaded.ok() ? 1 : 0;
  int all_ready = 0;
  int mpi_rc = MPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, comm);
  if (mpi_rc != MPI_SUCCESS)
    return make_error(HVD_ERR_MPI, "agreeing on NCCL's presence failed (MPI error %d)", mpi_rc);
  if (!loaded.ok()) return loaded;
  if (!all_ready)
    return make_error(HVD_ERR_NCCL,
                      "another rank of the group could not load NCCL (its error says why); "
                      "this rank loaded NCCL %s from %s",
                      nccl_version_text(api_->version).c_str(), api_->location.c_str());
  // The root's id travels with a flag, so that a failure there fails every rank
  // instead of leaving them waiting in ncclCommInitRank.
  struct {
    int ok;
    ncclUniqueId id;
  } msg;
  std::memset(&msg, 0, sizeof msg);
  std::string root_error;
  if (rank == 0) {
    ncclResult_t rc = api_->GetUniqueId(&msg.id);
    msg.ok = rc == ncclSuccess;
    if (!msg.ok) root_error = nccl_error(*api_, rc, "ncclGetUniqueId").message;
  }
  int rc = MPI_Bcast(&msg, sizeof msg, MPI_BYTE, 0, comm);
  if (rc != MPI_SUCCESS)
    return make_error(HVD_ERR_MPI, "broadcasting the NCCL unique id failed (MPI error %d)", rc);
  if (!msg.ok)
    return make_error(HVD_ERR_NCCL, "rank 0 of the group could not create an NCCL id%s%s",
                      root_error.empty() ? "" : ": ", root_error.c_str());
  DeviceGuard guard(device_->device());
  auto c = std::make_unique<Comm>();
  c->rank = rank;
  c->size = size;
  const ncclResult_t rc_init = api_->CommInitRank(&c->comm, size, msg.id, rank);
  if (rc_init != ncclSuccess) {
    Error err = nccl_error(*api_, rc_init, "ncclCommInitRank");
    // Ranks sharing a GPU: NCCL refuses them on every rank; say what to change.
    if (rc_init == ncclInvalidUsage && err.message.find("Duplicate GPU") != std::string::npos)
      err.message += "; NCCL needs a GPU of its own for each rank: start as many ranks per node "
                     "as it has GPUs, or set HOROVOD_GPU_OPERATIONS=MPI to stage device tensors "
                     "through host memory";
    return err;
  }
  comms_[key] = std::move(c);
  return Error::success();
}

Error NcclBackend::process_set_added(const Communicator&) {
  // The set's communicator is made by its first GPU collective (comm_for_set), so that
  // NCCL is loaded only when one needs it: by then the framework that owns the
  // tensors has loaded its own NCCL, which libhvd then shares.
  return Error::success();
}

void NcclBackend::process_set_removed(const Communicator& comm) {
  auto it = comms_.find(comm.id);
  if (it == comms_.end()) return;
  DeviceGuard guard(device_->device());
  device_->synchronize();  // no queued work may still use it
  if (it->second->comm) api_->CommDestroy(it->second->comm);
  comms_.erase(it);
}

Error NcclBackend::add_communicator(int64_t key, MPI_Comm comm) {
  if (key >= 0) return make_error(HVD_ERR_INTERNAL, "communicator key %lld is a process set id", static_cast<long long>(key));
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return create(key, comm, rank, size);
}

bool NcclBackend::has_communicator(int64_t key) const { return comms_.count(key) != 0; }

Error NcclBackend::ensure_communicator(int64_t key, MPI_Comm comm) {
  return has_communicator(key) ? Error::success() : add_communicator(key, comm);
}

int NcclBackend::communicator_size(int64_t key) const {
  auto it = comms_.find(key);
  return it == comms_.end() ? 0 : it->second->size;
}

Error NcclBackend::comm_for_set(const Communicator& comm, Comm** out) {
  if (!comm.member())
    return make_error(HVD_ERR_INTERNAL, "this rank is not in process set %d", comm.id);
  auto it = comms_.find(comm.id);
  if (it == comms_.end()) {
    Error err = create(comm.id, comm.mpi, comm.rank, comm.size);
    if (!err.ok()) return err;
    it = comms_.find(comm.id);
  }
  *out = it->second.get();
  return Error::success();
}

Error NcclBackend::comm_for_key(int64_t key, Comm** out) {
  auto it = comms_.find(key);
  if (it == comms_.end())
    return make_error(HVD_ERR_INTERNAL, "no NCCL communicator was added for key %lld",
                      static_cast<long long>(key));
  *out = it->second.get();
  return Error::success();
}

Error NcclBackend::group_start() {
  HVD_RETURN_IF_ERROR(load());
  HVD_NCCL_CHECK(GroupStart(), nullptr);
  return Error::success();
}

Error NcclBackend::group_end() {
  HVD_RETURN_IF_ERROR(load());
  HVD_NCCL_CHECK(GroupEnd(), nullptr);
  return Error::success();
}

Error NcclBackend::do_allreduce(Comm& c, const void* send, void* recv, int64_t count,
                                hvd_dtype_t dtype, hvd_reduce_op_t op,
                                std::atomic<uint64_t>* bytes) {
  ncclDataType_t type;
  Error err = check_reduction(dtype, op, &type);
  if (!err.ok()) return err;
  DeviceGuard guard(device_->device());
  HVD_NCCL_CHECK(AllReduce(send, recv, static_cast<size_t>(count), type, nccl_op(op, dtype),
                               c.comm, stream_of(device_)),
                 c.comm);
  if (bytes && c.size > 1)
    bytes->fetch_add(static_cast<uint64_t>(2.0 * (c.size - 1) / c.size * count * dtype_size(dtype)));
  return Error::success();
}

Error NcclBackend::allreduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                             hvd_reduce_op_t op, const Communicator& comm) {
  Comm* c = nullptr;
  Error err = comm_for_set(comm, &c);
  if (!err.ok()) return err;
  err = do_allreduce(*c, send, recv, count, dtype, op, &counters_->global_bytes);
  if (err.ok()) counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return err;
}

Error NcclBackend::allreduce_on(int64_t key, const void* send, void* recv, int64_t count,
                                hvd_dtype_t dtype, hvd_reduce_op_t op) {
  Comm* c = nullptr;
  Error err = comm_for_key(key, &c);
  if (!err.ok()) return err;
  return do_allreduce(*c, send, recv, count, dtype, op, nullptr);
}

Error NcclBackend::broadcast(void* buffer, int64_t count, hvd_dtype_t dtype, int root,
                             const Communicator& comm) {
  Comm* c = nullptr;
  Error err = comm_for_set(comm, &c);
  if (!err.ok()) return err;
  if (root < 0 || root >= c->size)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "root %d is not a rank of process set %d", root, comm.id);
  DeviceGuard guard(device_->device());
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  HVD_NCCL_CHECK(Broadcast(buffer, buffer, bytes, ncclUint8, root, c->comm, stream_of(device_)),
                 c->comm);
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  if (c->rank == root) counters_->global_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return Error::success();
}

Error NcclBackend::do_allgatherv(Comm& c, const void* send, void* recv,
                                 const std::vector<int64_t>& counts,
                                 const std::vector<int64_t>& displs, hvd_dtype_t dtype,
                                 std::atomic<uint64_t>* bytes) {
  if (static_cast<int>(counts.size()) != c.size || static_cast<int>(displs.size()) != c.size)
    return make_error(HVD_ERR_INTERNAL, "allgatherv needs one count and displacement per rank");
  DeviceGuard guard(device_->device());
  const size_t esize = dtype_size(dtype);
  char* out = static_cast<char*>(recv);
  const int me = c.rank;
  if (equal_blocks(counts, displs)) {
    const size_t block = static_cast<size_t>(counts[0]) * esize;
    HVD_NCCL_CHECK(AllGather(send, out, block, ncclUint8, c.comm, stream_of(device_)), c.comm);
  } else {
    // Unequal blocks: every rank broadcasts its own, all in one group.
    Group group(*api_);
    for (int r = 0; r < c.size; ++r) {
      const size_t n = static_cast<size_t>(counts[static_cast<size_t>(r)]) * esize;
      if (n == 0) continue;
      char* dst = out + displs[static_cast<size_t>(r)] * esize;
      HVD_NCCL_CHECK(Broadcast(r == me ? send : dst, dst, n, ncclUint8, r, c.comm,
                                   stream_of(device_)),
                     c.comm);
    }
    Error err = group.end();
    if (!err.ok()) return err;
  }
  if (bytes && c.size > 1)
    bytes->fetch_add(static_cast<uint64_t>(counts[static_cast<size_t>(me)]) * esize *
                     static_cast<uint64_t>(c.size - 1));
  return Error::success();
}

Error NcclBackend::allgatherv(const void* send, void* recv, const std::vector<int64_t>& counts,
                              const std::vector<int64_t>& displs, hvd_dtype_t dtype,
                              const Communicator& comm) {
  Comm* c = nullptr;
  Error err = comm_for_set(comm, &c);
  if (!err.ok()) return err;
  err = do_allgatherv(*c, send, recv, counts, displs, dtype, &counters_->global_bytes);
  if (err.ok()) counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return err;
}

Error NcclBackend::allgatherv_on(int64_t key, const void* send, void* recv,
                                 const std::vector<int64_t>& counts,
                                 const std::vector<int64_t>& displs, hvd_dtype_t dtype) {
  Comm* c = nullptr;
  Error err = comm_for_key(key, &c);
  if (!err.ok()) return err;
  return do_allgatherv(*c, send, recv, counts, displs, dtype, nullptr);
}

Error NcclBackend::alltoallv(const void* send, const std::vector<int64_t>& send_counts,
                             const std::vector<int64_t>& send_displs, void* recv,
                             const std::vector<int64_t>& recv_counts,
                             const std::vector<int64_t>& recv_displs, hvd_dtype_t dtype,
                             int64_t /*largest_count: one grouped call*/, const Communicator& comm) {
  Comm* c = nullptr;
  Error err = comm_for_set(comm, &c);
  if (!err.ok()) return err;
  const size_t n = static_cast<size_t>(c->size);
  if (send_counts.size() != n || send_displs.size() != n || recv_counts.size() != n ||
      recv_displs.size() != n)
    return make_error(HVD_ERR_INTERNAL, "alltoallv needs one count and displacement per rank");
  DeviceGuard guard(device_->device());
  const size_t esize = dtype_size(dtype);
  uint64_t sent = 0;
  Group group(*api_);
  for (size_t r = 0; r < n; ++r) {
    const size_t out_bytes = static_cast<size_t>(send_counts[r]) * esize;
    const size_t in_bytes = static_cast<size_t>(recv_counts[r]) * esize;
    if (out_bytes > 0)
      HVD_NCCL_CHECK(Send(static_cast<const char*>(send) + send_displs[r] * esize, out_bytes,
                              ncclUint8, static_cast<int>(r), c->comm, stream_of(device_)),
                     c->comm);
    if (in_bytes > 0)
      HVD_NCCL_CHECK(Recv(static_cast<char*>(recv) + recv_displs[r] * esize, in_bytes,
                              ncclUint8, static_cast<int>(r), c->comm, stream_of(device_)),
                     c->comm);
    if (static_cast<int>(r) != c->rank) sent += out_bytes;
  }
  err = group.end();
  if (!err.ok()) return err;
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  counters_->global_bytes.fetch_add(sent, std::memory_order_relaxed);
  return Error::success();
}

Error NcclBackend::do_reducescatter(Comm& c, const void* send, void* recv,
                                    const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                                    hvd_reduce_op_t op, std::atomic<uint64_t>* bytes) {
  if (static_cast<int>(counts.size()) != c.size)
    return make_error(HVD_ERR_INTERNAL, "reducescatter needs one count per rank");
  ncclDataType_t type;
  Error err = check_reduction(dtype, op, &type);
  if (!err.ok()) return err;
  DeviceGuard guard(device_->device());
  const size_t esize = dtype_size(dtype);
  bool equal = true;
  int64_t total = 0;
  for (int64_t k : counts) {
    equal = equal && k == counts[0];
    total += k;
  }
  if (equal) {
    HVD_NCCL_CHECK(ReduceScatter(send, recv, static_cast<size_t>(counts[0]), type,
                                     nccl_op(op, dtype), c.comm, stream_of(device_)),
                   c.comm);
  } else {
    // Unequal blocks: one reduce per block to its owner, all in one group.
    Group group(*api_);
    int64_t offset = 0;
    for (int r = 0; r < c.size; ++r) {
      const int64_t k = counts[static_cast<size_t>(r)];
      if (k > 0)
        HVD_NCCL_CHECK(Reduce(static_cast<const char*>(send) + offset * esize,
                                  r == c.rank ? recv : nullptr, static_cast<size_t>(k), type,
                                  nccl_op(op, dtype), r, c.comm, stream_of(device_)),
                       c.comm);
      offset += k;
    }
    err = group.end();
    if (!err.ok()) return err;
  }
  if (bytes && c.size > 1)
    bytes->fetch_add(static_cast<uint64_t>((total - counts[static_cast<size_t>(c.rank)]) * static_cast<int64_t>(esize)));
  return Error::success();
}

Error NcclBackend::reducescatter(const void* send, void* recv, const std::vector<int64_t>& counts,
                                 hvd_dtype_t dtype, hvd_reduce_op_t op, const Communicator& comm) {
  Comm* c = nullptr;
  Error err = comm_for_set(comm, &c);
  if (!err.ok()) return err;
  err = do_reducescatter(*c, send, recv, counts, dtype, op, &counters_->global_bytes);
  if (err.ok()) counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return err;
}

Error NcclBackend::reducescatter_on(int64_t key, const void* send, void* recv,
                                    const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                                    hvd_reduce_op_t op) {
  Comm* c = nullptr;
  Error err = comm_for_key(key, &c);
  if (!err.ok()) return err;
  return do_reducescatter(*c, send, recv, counts, dtype, op, nullptr);
}

Error NcclBackend::reduce_on(int64_t key, const void* send, void* recv, int64_t count,
                             hvd_dtype_t dtype, hvd_reduce_op_t op, int root) {
  Comm* c = nullptr;
  Error err = comm_for_key(key, &c);
  if (!err.ok()) return err;
  ncclDataType_t type;
  err = check_reduction(dtype, op, &type);
  if (!err.ok()) return err;
  if (root < 0 || root >= c->size)
    return make_error(HVD_ERR_INTERNAL, "reduce root %d is outside a communicator of %d", root, c->size);
  DeviceGuard guard(device_->device());
  HVD_NCCL_CHECK(Reduce(send, recv, static_cast<size_t>(count), type, nccl_op(op, dtype), root,
                            c->comm, stream_of(device_)),
                 c->comm);
  return Error::success();
}

Error NcclBackend::broadcasts_on(int64_t key, const std::vector<BroadcastBlock>& blocks) {
  Comm* c = nullptr;
  Error err = comm_for_key(key, &c);
  if (!err.ok()) return err;
  for (const BroadcastBlock& b : blocks)
    if (b.root < 0 || b.root >= c->size)
      return make_error(HVD_ERR_INTERNAL, "broadcast root %d is outside a communicator of %d",
                        b.root, c->size);
  DeviceGuard guard(device_->device());
  Group group(*api_);
  for (const BroadcastBlock& b : blocks) {
    if (b.bytes == 0) continue;
    HVD_NCCL_CHECK(Broadcast(b.buffer, b.buffer, b.bytes, ncclUint8, b.root, c->comm,
                                 stream_of(device_)),
                   c->comm);
  }
  return group.end();
}

Error NcclBackend::send_recv_on(int64_t key, const std::vector<PeerBlock>& sends,
                                const std::vector<PeerBlock>& recvs) {
  Comm* c = nullptr;
  Error err = comm_for_key(key, &c);
  if (!err.ok()) return err;
  for (const auto* list : {&sends, &recvs})
    for (const PeerBlock& b : *list)
      if (b.peer < 0 || b.peer >= c->size || b.peer == c->rank)
        return make_error(HVD_ERR_INTERNAL, "peer %d is not another rank of a communicator of %d",
                          b.peer, c->size);
  DeviceGuard guard(device_->device());
  Group group(*api_);
  for (const PeerBlock& b : sends)
    if (b.bytes)
      HVD_NCCL_CHECK(Send(b.buffer, b.bytes, ncclUint8, b.peer, c->comm, stream_of(device_)),
                     c->comm);
  for (const PeerBlock& b : recvs)
    if (b.bytes)
      HVD_NCCL_CHECK(Recv(b.buffer, b.bytes, ncclUint8, b.peer, c->comm, stream_of(device_)),
                     c->comm);
  return group.end();
}

}  // namespace hvd
