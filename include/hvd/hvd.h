/*
 * libhvd: MPI-native, Horovod-compatible collectives for data-parallel training.
 *
 * This header is the whole C ABI. It is valid C99 and C++ and includes only
 * <stddef.h> and <stdint.h>; MPI types live in <hvd/hvd_mpi.h>.
 *
 * Conventions that hold for every function unless its comment says otherwise:
 *
 *  - Status: functions return hvd_status_t. On failure, hvd_last_error() returns a
 *    sentence describing what was wrong on the calling OS thread (see its comment
 *    for languages whose tasks move between threads, such as Go);
 *    hvd_status_string() gives the fixed meaning of the code. Query functions returning int return -1
 *    when the library is not initialized.
 *  - Threads: every function is thread-safe. Collectives may be enqueued from any
 *    number of user threads at once; one background thread per process drives MPI.
 *    hvd_init/hvd_shutdown must not race with each other.
 *  - Names: a collective is identified across ranks by its name; ranks may enqueue
 *    names in any order. A NULL name is replaced by an automatic name built from the
 *    operation and a per-process call counter ("allreduce.noname.7"), so unnamed calls
 *    must then be made in the same order on every rank. Every call of a tensor
 *    operation made while initialized takes its automatic name before anything is
 *    checked, so a call refused on one rank (and not on another) leaves later unnamed
 *    calls matched. A name already in flight on this rank is HVD_ERR_DUPLICATE_NAME.
 *    A name is UTF-8 text: one that is not is HVD_ERR_INVALID_ARGUMENT (the message
 *    gives the offset of its first bad byte), refused to the other ranks under the name
 *    with U+FFFD for each bad byte, as hvd_refuse does.
 *  - Agreement: all ranks of the process set must agree on the operation, dtype,
 *    counts/shapes, root, reduce op, scale factors and device of a name; otherwise the
 *    operation completes with HVD_ERR_MISMATCH on every rank and the runtime goes on.
 *  - Errors: a status returned by the call itself concerns this rank's arguments
 *    alone (a NULL buffer, a count that disagrees with a given shape, a root outside
 *    the set). What depends on values the ranks must agree on is judged in
 *    negotiation, on every rank alike, and comes from hvd_wait: a reduce op the dtype
 *    cannot take (HVD_OP_AVERAGE or scale factors on HVD_BOOL, HVD_OP_ADASUM on an
 *    integer dtype: INVALID_ARGUMENT), HVD_OP_ADASUM on a process set whose size is
 *    not a power of two or on a reducescatter (UNSUPPORTED), a scalar passed to
 *    allgather or reducescatter (INVALID_ARGUMENT); a rank that differs from the others there gets, with every
 *    other rank, HVD_ERR_MISMATCH rather than leaving them waiting.
 *  - Memory: buffers are owned by the caller and must stay valid (and, for inputs,
 *    unchanged) until the operation completes (the blocking call returns, or
 *    hvd_wait returns for async calls). Outputs of unknown size are allocated by the
 *    library (release with hvd_free) or by the allocator in hvd_op_options_t.
 *  - In place: an operation is in place when sendbuf == recvbuf.
 *  - Blocking calls are the async call followed by hvd_wait.
 */
#ifndef HVD_HVD_H
#define HVD_HVD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define HVD_API
#elif defined(__GNUC__)
#define HVD_API __attribute__((visibility("default")))
#else
#define HVD_API
#endif

/* ---------------------------------------------------------------------------------
 * Status codes. Values are pinned: once released they never change. The enum and
 * the fixed sentences returned by hvd_status_string() come from this one list.
 * ------------------------------------------------------------------------------ */
#define HVD_STATUS_MAP(X)                                                                 \
  X(HVD_SUCCESS, 0, "success")                                                            \
  X(HVD_ERR_NOT_INITIALIZED, 1,                                                           \
    "libhvd is not initialized (call hvd_init first, or after hvd_shutdown again)")       \
  X(HVD_ERR_INVALID_ARGUMENT, 2,                                                          \
    "invalid argument (hvd_last_error() names the argument and the accepted values)")     \
  X(HVD_ERR_MISMATCH, 3,                                                                  \
    "ranks disagree on an operation (hvd_last_error() names the tensor and the ranks)")   \
  X(HVD_ERR_DUPLICATE_NAME, 4,                                                            \
    "a tensor with this name is already in flight on this rank (wait for it, or rename)") \
  X(HVD_ERR_SHUT_DOWN, 5, "libhvd was shut down before the operation completed")          \
  X(HVD_ERR_TIMEOUT, 6,                                                                   \
    "operation timed out because some ranks never submitted it (see "                     \
    "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS)")                                               \
  X(HVD_ERR_UNSUPPORTED, 7, "not supported by this build or for these arguments")         \
  X(HVD_ERR_MPI, 8, "MPI call failed (run with HOROVOD_LOG_LEVEL=debug for details)")     \
  X(HVD_ERR_CUDA, 9, "CUDA call failed, or no usable GPU (run with HOROVOD_LOG_LEVEL=debug)") \
  X(HVD_ERR_NCCL, 10, "NCCL call failed (run with NCCL_DEBUG=INFO for details)")          \
  X(HVD_ERR_NO_MEMORY, 11, "out of memory")                                               \
  X(HVD_ERR_INTERNAL, 12, "internal error in libhvd (please report it with the log)")

#define HVD_STATUS_ENUM_ENTRY_(name, value, text) name = value,
typedef enum { HVD_STATUS_MAP(HVD_STATUS_ENUM_ENTRY_) } hvd_status_t;
#undef HVD_STATUS_ENUM_ENTRY_

/* Element types. Values are pinned, as the statuses' are: a binding in another
 * language may write the numbers down; they never change, and new types get new
 * numbers after the last. HVD_FLOAT16 is IEEE binary16; HVD_BFLOAT16 is bfloat16; both are
 * reduced in float32 on the host, each partial result stored back in the tensor's own
 * type (as Horovod does): a sum beyond float16's range (65504) is inf even where the
 * average would fit; scale down first with prescale_factor. HVD_BOOL is one byte, 0
 * or non-zero. */
typedef enum {
  HVD_UINT8 = 0,
  HVD_INT8 = 1,
  HVD_UINT16 = 2,
  HVD_INT16 = 3,
  HVD_INT32 = 4,
  HVD_INT64 = 5,
  HVD_FLOAT16 = 6,
  HVD_BFLOAT16 = 7,
  HVD_FLOAT32 = 8,
  HVD_FLOAT64 = 9,
  HVD_BOOL = 10
} hvd_dtype_t;

/* Reduction operations, numbered as in Horovod. Values are pinned: they never
 * change, and new operations get new numbers after the last. AVERAGE divides the sum by the
 * number of ranks of the process set (integers: truncating division). For HVD_BOOL,
 * SUM and MAX are logical or, MIN and PRODUCT logical and.
 * ADASUM (allreduce of float16, bfloat16, float32, float64 over a process set of 1, 2,
 * 4, 8... ranks) combines the ranks' tensors pairwise, (0,1), (2,3), then the pairs'
 * results, and so on: a and b become (1 - a.b/(2|a|^2)) a + (1 - a.b/(2|b|^2)) b, the
 * sum of orthogonal tensors and the average of parallel ones, each tensor with its own
 * coefficients even when fused (Horovod's Adasum, recursive vector halving and
 * distance doubling over MPI). Prescale applies before, postscale after. Device
 * tensors with NCCL: summed within each node by NCCL, Adasum across nodes of the
 * node sums, divided by the ranks per node (Horovod's GPU Adasum); without NCCL,
 * staged through host memory and combined as host tensors are. */
typedef enum {
  HVD_OP_AVERAGE = 0,
  HVD_OP_SUM = 1,
  HVD_OP_ADASUM = 2,
  HVD_OP_MIN = 3,
  HVD_OP_MAX = 4,
  HVD_OP_PRODUCT = 5
} hvd_reduce_op_t;

typedef int64_t hvd_handle_t;

#define HVD_DEVICE_CPU (-1)
#define HVD_GLOBAL_PROCESS_SET 0
#define HVD_MAX_NDIM 32

/* ---------------------------------------------------------------------------------
 * Per-operation options. Extensible: struct_size comes first and is set by
 * hvd_op_options_init() or HVD_OP_OPTIONS_INITIALIZER, so a program built against
 * an older header keeps working with a newer library. Passing NULL where options are
 * accepted means the defaults.
 * ------------------------------------------------------------------------------ */

/* Allocates nbytes for an output of unknown size. Called on libhvd's background
 * thread; must be thread-safe; returns NULL on failure (the op then fails with
 * HVD_ERR_NO_MEMORY). nbytes may be 0. */
typedef void* (*hvd_allocator_fn)(size_t nbytes, int device, void* user_data);

typedef struct hvd_op_options {
  size_t struct_size;        /* sizeof(hvd_op_options_t); set by the initializer */
  double prescale_factor;    /* multiplies the input before the reduction; 1.0 */
  double postscale_factor;   /* multiplies the result after it; 1.0 */
  int32_t device;            /* HVD_DEVICE_CPU, or the CUDA ordinal of the buffers */
  int32_t process_set_id;    /* HVD_GLOBAL_PROCESS_SET or an id from hvd_add_process_set */
  void* stream;              /* cudaStream_t the inputs were produced on; NULL = default */
  hvd_allocator_fn allocator;/* for outputs of unknown size; NULL = library (hvd_free) */
  void* allocator_user_data; /* passed to allocator */
  /* The tensor's shape, for hvd_allreduce_async, hvd_broadcast_async and a grouped
   * allreduce of one tensor (the other operations take their shape as an argument
   * and ignore these fields). ndim 0 (the default) means not given: the tensor is
   * count elements and ranks are compared by count. Given (ndim 1..HVD_MAX_NDIM,
   * shape pointing to ndim dimensions whose product is count), the shape travels in
   * negotiation and the ranks that gave one must agree on it, as in Horovod: an
   * allreduce of (2, 3) on one rank and (3, 2) on another is HVD_ERR_MISMATCH on
   * every rank, its message naming the tensor, "shape" and each rank's shape. The
   * array is read during the call only. HVD_ERR_INVALID_ARGUMENT: ndim < 0 or above
   * HVD_MAX_NDIM, shape NULL with ndim > 0, a negative dimension, a product other
   * than count, or ndim > 0 on a grouped allreduce of several tensors. */
  const int64_t* shape;
  int32_t ndim;
  int32_t reserved_pad;      /* zero */
  uint8_t reserved[48];      /* zero; room for later fields */
} hvd_op_options_t;

#define HVD_OP_OPTIONS_INITIALIZER                                                       \
  { sizeof(hvd_op_options_t), 1.0, 1.0, HVD_DEVICE_CPU, HVD_GLOBAL_PROCESS_SET, NULL, NULL, \
    NULL, NULL, 0, 0, {0} }

/* Fills *options with the defaults. HVD_ERR_INVALID_ARGUMENT if options is NULL.
 * Callable before hvd_init. */
HVD_API hvd_status_t hvd_op_options_init(hvd_op_options_t* options);

/* ---------------------------------------------------------------------------------
 * Life cycle
 * ------------------------------------------------------------------------------ */

/* Initializes the library on MPI_COMM_WORLD, calling MPI_Init_thread if nobody has
 * (then hvd_shutdown finalizes MPI only at process exit, so hvd_init may be called
 * again). Idempotent: a second call while initialized returns HVD_SUCCESS.
 * Collective over all ranks. In the child of a fork() taken after libhvd was
 * initialized in the parent: HVD_ERR_UNSUPPORTED (the child cannot use MPI). */
HVD_API hvd_status_t hvd_init(void);

/* As hvd_init, and creates nsets static process sets: set i holds the nranks[i]
 * world ranks listed in ranks[i] (ascending, no duplicates). Their ids are 1..nsets
 * in order. Collective; every rank passes the same sets. */
HVD_API hvd_status_t hvd_init_with_process_sets(int nsets, const int* const* ranks,
                                                const int* nranks);

/* Stops the background thread; every pending operation completes with
 * HVD_ERR_SHUT_DOWN. Safe to call when not initialized (HVD_SUCCESS). Collective in
 * the sense that every rank should call it; a rank that calls it alone makes the
 * others' operations fail with HVD_ERR_SHUT_DOWN rather than hang. Frees libhvd's own
 * MPI objects. Where the application initialized MPI, call it before MPI_Finalize:
 * an MPI_Finalize that finds libhvd running shuts it down with a warning, but MPICH
 * may still abort at exit then. In the child of a fork() taken after init:
 * HVD_ERR_NOT_INITIALIZED, saying why (the runtime is the parent's, not the child's
 * to stop). */
HVD_API hvd_status_t hvd_shutdown(void);

/* 1 if initialized, else 0. 0 in the child of a fork() taken after init: the child
 * shares nothing of the parent's runtime, every call there fails at once with
 * HVD_ERR_NOT_INITIALIZED saying why, and the child's exit does not shut the parent's
 * runtime down. Create worker processes before hvd_init, or start them with spawn. */
HVD_API int hvd_is_initialized(void);

/* Rank and size in the global set; local = ranks on this node; cross = ranks with
 * this rank's local rank, one per node. All return -1 before init. In the child of a
 * fork() taken after init (a DataLoader worker) these, hvd_is_homogeneous and
 * hvd_gpu_device return the parent's values, as Horovod does, though the child
 * cannot use the collectives (see hvd_is_initialized). */
HVD_API int hvd_rank(void);
HVD_API int hvd_size(void);
HVD_API int hvd_local_rank(void);
HVD_API int hvd_local_size(void);
HVD_API int hvd_cross_rank(void);
HVD_API int hvd_cross_size(void);

/* 1 if every node runs the same number of ranks, 0 if not, -1 before init. */
HVD_API int hvd_is_homogeneous(void);

/* The CUDA device this rank was pinned to, or -1 (no GPU, no CUDA, or pinning off). */
HVD_API int hvd_gpu_device(void);

/* Fixed sentence for a status (never NULL; "unknown status" for others). */
HVD_API const char* hvd_status_string(hvd_status_t status);

/* Detail of the last failure on the calling thread ("" if none). The pointer stays
 * valid until the next libhvd call on this thread.
 * The detail is kept per OS thread: read it on the thread that made the failed call,
 * before that thread calls libhvd again. A runtime that moves its tasks between OS
 * threads must hold the task on one thread from the call to this read: in Go, call
 * runtime.LockOSThread() before the call and runtime.UnlockOSThread() after reading
 * (a goroutine may otherwise resume on another thread and read another call's
 * detail, or ""). The status returned by the call is always the call's own. */
HVD_API const char* hvd_last_error(void);

/* ---------------------------------------------------------------------------------
 * Allreduce and broadcast
 * ------------------------------------------------------------------------------ */

/* Reduces count elements of sendbuf across the ranks into recvbuf (in place when
 * sendbuf == recvbuf). count may be 0 and may exceed 2^31. */
HVD_API hvd_status_t hvd_allreduce(const void* sendbuf, void* recvbuf, int64_t count,
                                   hvd_dtype_t dtype, hvd_reduce_op_t op, const char* name);

/* Copies count elements of root_rank's buffer into every rank's buffer of the process
 * set. root_rank is a global rank (as hvd_rank() returns it, and as in Horovod), also
 * for a process set: in the set of world ranks [1, 2], root_rank 1 is world rank 1,
 * the set's first member. A root_rank that is not a member of the set is
 * HVD_ERR_INVALID_ARGUMENT, returned at once, naming the root and the set's ranks;
 * ranks that pass different roots get HVD_ERR_MISMATCH. */
HVD_API hvd_status_t hvd_broadcast(void* buffer, int64_t count, hvd_dtype_t dtype,
                                   int root_rank, const char* name);

/* Asynchronous forms: enqueue and return a handle at once. Argument errors are
 * returned immediately; errors found later (mismatch, shutdown, MPI) come from
 * hvd_wait. options may be NULL. */
HVD_API hvd_status_t hvd_allreduce_async(const void* sendbuf, void* recvbuf, int64_t count,
                                         hvd_dtype_t dtype, hvd_reduce_op_t op,
                                         const char* name, const hvd_op_options_t* options,
                                         hvd_handle_t* handle);
HVD_API hvd_status_t hvd_broadcast_async(void* buffer, int64_t count, hvd_dtype_t dtype,
                                         int root_rank, const char* name,
                                         const hvd_op_options_t* options,
                                         hvd_handle_t* handle);

/* Grouped allreduce: ntensors tensors of one dtype that complete together and are
 * fused as one unit: every member, whatever its size, is copied into one fusion
 * buffer and reduced by one collective (a group larger than the fusion threshold
 * fills consecutive buffers; a member larger than the threshold alone is reduced in
 * place). Tensor i has counts[i] elements from sendbufs[i] into recvbufs[i]. Each
 * tensor's name is "<name>.<i>". */
HVD_API hvd_status_t hvd_grouped_allreduce(int ntensors, const void* const* sendbufs,
                                           void* const* recvbufs, const int64_t* counts,
                                           hvd_dtype_t dtype, hvd_reduce_op_t op,
                                           const char* name,
                                           const hvd_op_options_t* options);
HVD_API hvd_status_t hvd_grouped_allreduce_async(int ntensors, const void* const* sendbufs,
                                                 void* const* recvbufs,
                                                 const int64_t* counts, hvd_dtype_t dtype,
                                                 hvd_reduce_op_t op, const char* name,
                                                 const hvd_op_options_t* options,
                                                 hvd_handle_t* handle);

/* ---------------------------------------------------------------------------------
 * Allgather, alltoall, reducescatter. Tensors are row-major with ndim dimensions
 * (1 <= ndim <= HVD_MAX_NDIM) given by shape; rows are along the first dimension.
 * A scalar (ndim 0, shape may be NULL) has no rows: allgather and reducescatter fail
 * it in negotiation on every rank (HVD_ERR_INVALID_ARGUMENT from hvd_wait, or
 * HVD_ERR_MISMATCH where other ranks pass rows); alltoall refuses it at once.
 * ------------------------------------------------------------------------------ */

/* Concatenates every rank's rows, in rank order of the process set. The first
 * dimension may differ per rank, the others must agree. On completion *recvbuf points
 * to the output (allocated by options->allocator, or by libhvd: free with hvd_free),
 * *recv_dim0 holds its first dimension and, if recv_dim0_per_rank is not NULL, entry
 * r of it (set-size entries) the rows contributed by set rank r. The pointed-to
 * outputs must stay valid until completion. */
HVD_API hvd_status_t hvd_allgather(const void* sendbuf, int ndim, const int64_t* shape,
                                   hvd_dtype_t dtype, void** recvbuf, int64_t* recv_dim0,
                                   int64_t* recv_dim0_per_rank, const char* name,
                                   const hvd_op_options_t* options);
HVD_API hvd_status_t hvd_allgather_async(const void* sendbuf, int ndim, const int64_t* shape,
                                         hvd_dtype_t dtype, void** recvbuf,
                                         int64_t* recv_dim0, int64_t* recv_dim0_per_rank,
                                         const char* name, const hvd_op_options_t* options,
                                         hvd_handle_t* handle);

/* Sends send_splits[r] rows to set rank r (send_splits: set-size entries summing to
 * shape[0]; NULL splits the rows evenly, and shape[0] must then be divisible by the
 * set size). The received rows, in rank order, go to *recvbuf (allocated as for
 * allgather), their count to *recv_dim0, and the rows received from each rank to
 * recv_splits (set-size entries; may be NULL). */
HVD_API hvd_status_t hvd_alltoall(const void* sendbuf, int ndim, const int64_t* shape,
                                  hvd_dtype_t dtype, const int64_t* send_splits,
                                  void** recvbuf, int64_t* recv_dim0, int64_t* recv_splits,
                                  const char* name, const hvd_op_options_t* options);
HVD_API hvd_status_t hvd_alltoall_async(const void* sendbuf, int ndim, const int64_t* shape,
                                        hvd_dtype_t dtype, const int64_t* send_splits,
                                        void** recvbuf, int64_t* recv_dim0,
                                        int64_t* recv_splits, const char* name,
                                        const hvd_op_options_t* options,
                                        hvd_handle_t* handle);

/* Reduces the tensor across ranks (SUM, AVERAGE, MIN, MAX or PRODUCT: Horovod's
 * reducescatter takes the first two; ADASUM is UNSUPPORTED) and leaves set rank r with its
 * block of rows: hvd_reducescatter_rows(shape[0], r, size) rows, the first
 * shape[0] % size ranks getting one extra. recvbuf is provided by the caller.
 * Small tensors ready together (below HVD_INPLACE_MIN_BYTES, 256 KiB by
 * default, with the same dtype, op and scaling) are fused into one reduce-scatter. */
HVD_API hvd_status_t hvd_reducescatter(const void* sendbuf, void* recvbuf, int ndim,
                                       const int64_t* shape, hvd_dtype_t dtype,
                                       hvd_reduce_op_t op, const char* name,
                                       const hvd_op_options_t* options);
HVD_API hvd_status_t hvd_reducescatter_async(const void* sendbuf, void* recvbuf, int ndim,
                                             const int64_t* shape, hvd_dtype_t dtype,
                                             hvd_reduce_op_t op, const char* name,
                                             const hvd_op_options_t* options,
                                             hvd_handle_t* handle);

/* Grouped allgather and reducescatter: ntensors tensors of one dtype that complete
 * together under one handle and are fused as one unit (as hvd_grouped_allreduce).
 * Tensor i has ndims[i] dimensions shapes[i] and its data at sendbufs[i]; member i is
 * named "<name>.<i>". Allgather: tensor i's output pointer and first dimension go to
 * recvbufs[i] and recv_dim0s[i] (outputs allocated as for hvd_allgather), and, if
 * recv_dim0_per_rank is not NULL, the rows each set rank contributed to
 * recv_dim0_per_rank[i * set_size + r]. Reducescatter: recvbufs[i] receives this
 * rank's block of tensor i (hvd_reducescatter_rows(shapes[i][0], ...) rows). */
HVD_API hvd_status_t hvd_grouped_allgather(int ntensors, const void* const* sendbufs,
                                           const int* ndims, const int64_t* const* shapes,
                                           hvd_dtype_t dtype, void** recvbufs,
                                           int64_t* recv_dim0s, int64_t* recv_dim0_per_rank,
                                           const char* name, const hvd_op_options_t* options);
HVD_API hvd_status_t hvd_grouped_allgather_async(int ntensors, const void* const* sendbufs,
                                                 const int* ndims, const int64_t* const* shapes,
                                                 hvd_dtype_t dtype, void** recvbufs,
                                                 int64_t* recv_dim0s,
                                                 int64_t* recv_dim0_per_rank, const char* name,
                                                 const hvd_op_options_t* options,
                                                 hvd_handle_t* handle);
HVD_API hvd_status_t hvd_grouped_reducescatter(int ntensors, const void* const* sendbufs,
                                               void* const* recvbufs, const int* ndims,
                                               const int64_t* const* shapes, hvd_dtype_t dtype,
                                               hvd_reduce_op_t op, const char* name,
                                               const hvd_op_options_t* options);
HVD_API hvd_status_t hvd_grouped_reducescatter_async(int ntensors, const void* const* sendbufs,
                                                     void* const* recvbufs, const int* ndims,
                                                     const int64_t* const* shapes,
                                                     hvd_dtype_t dtype, hvd_reduce_op_t op,
                                                     const char* name,
                                                     const hvd_op_options_t* options,
                                                     hvd_handle_t* handle);

/* Rows that set rank set_rank receives from a reducescatter of dim0 rows over
 * set_size ranks; -1 for invalid arguments. Pure function, callable before init. */
HVD_API int64_t hvd_reducescatter_rows(int64_t dim0, int set_rank, int set_size);

/* A collective that a binding refused in its own language, before calling libhvd
 * (Python's TypeError for an object that is no array). The process set's other ranks
 * made or will make the call and would wait for this rank for ever; libhvd tells them
 * as it tells them of the calls it refuses itself: the operation fails on every other
 * rank with HVD_ERR_MISMATCH and a message naming this rank and `reason`.
 * op: the function's name without "hvd_" and "_async": "allreduce", "broadcast",
 * "allgather", "alltoall", "reducescatter", "grouped_allreduce", "grouped_allgather" or
 * "grouped_reducescatter". name: the call's, or NULL for the automatic name the call
 * would have taken (so later unnamed calls stay matched); a name that is not UTF-8 is
 * announced with U+FFFD for each bad byte. ntensors: a grouped call's
 * tensor count (each member is refused; < 1: the first alone), else ignored.
 * options: the call's (process set), or NULL. Returns HVD_SUCCESS once announced. */
HVD_API hvd_status_t hvd_refuse(const char* op, const char* name, int ntensors,
                                const hvd_op_options_t* options, const char* reason);

/* Releases memory that libhvd allocated (an output, hvd_alloc_host). NULL is ignored. */
HVD_API void hvd_free(void* ptr);

/* ---------------------------------------------------------------------------------
 * Host memory laid out for the transfers
 *
 * MPI moves a large message between ranks of one machine by copying it out of the
 * other process (the kernel looks up and pins each of its pages): from memory in
 * 2 MiB pages that runs 20-30% faster than from 4 KiB pages. Linux gives huge pages
 * only where asked when its transparent huge pages are in "madvise" mode (the default
 * of Debian and Ubuntu). libhvd's own buffers and outputs ask; so can a caller's
 * large tensors (a flat gradient buffer), through these. Over a network the pages
 * change nothing measurable. Both are thread-safe and need no hvd_init.
 * ------------------------------------------------------------------------------ */

/* *ptr = nbytes of uninitialized host memory, released with hvd_free. From 1 MiB up
 * it is aligned to 2 MiB, rounded up to whole 2 MiB pages and backed by huge pages
 * where the system allows; smaller sizes come from malloc. nbytes 0 gives a valid
 * pointer. ptr NULL: HVD_ERR_INVALID_ARGUMENT; out of memory: HVD_ERR_NO_MEMORY with
 * *ptr NULL. */
HVD_API hvd_status_t hvd_alloc_host(size_t nbytes, void** ptr);

/* Asks for huge pages for memory the caller allocated: the whole 2 MiB pages inside
 * [ptr, ptr + nbytes) (the edges are left alone). Advice only: the data stays as it
 * is, and it applies to pages first touched after the call, so allocate, advise, then
 * fill (pages already touched may be merged later by the kernel). *advised (advised
 * may be NULL) gets the bytes covered: 0 where the range holds no whole huge page or
 * the system offers none, which is not an error. ptr NULL with nbytes > 0:
 * HVD_ERR_INVALID_ARGUMENT. */
HVD_API hvd_status_t hvd_advise_host(void* ptr, size_t nbytes, size_t* advised);

/* ---------------------------------------------------------------------------------
 * Handles
 * ------------------------------------------------------------------------------ */

/* *done = 1 when the operation has completed (hvd_wait will not block), else 0.
 * Unknown handle: HVD_ERR_INVALID_ARGUMENT. */
HVD_API hvd_status_t hvd_poll(hvd_handle_t handle, int* done);

/* Waits for the operation and returns its status; the handle is then released (a
 * second wait is HVD_ERR_INVALID_ARGUMENT). */
HVD_API hvd_status_t hvd_wait(hvd_handle_t handle);

/* For frameworks with their own CUDA streams: makes work queued later on stream (a
 * cudaStream_t passed as void*; NULL is the default stream) wait for a device
 * operation's result, blocking the host only until libhvd has queued the operation on
 * the device, not until it has finished. The handle stays valid: release it later
 * with hvd_wait (or keep polling it). For a host-memory operation it waits for
 * completion, as there is no device work to order after. Returns the operation's
 * error if it failed before reaching the device. Thread-safe. */
HVD_API hvd_status_t hvd_stream_wait(hvd_handle_t handle, void* stream);

/* ---------------------------------------------------------------------------------
 * Synchronization
 * ------------------------------------------------------------------------------ */

/* Returns when every rank of the process set has called it. */
HVD_API hvd_status_t hvd_barrier(int32_t process_set_id);

/* Declares that this rank has no more data for this epoch (Horovod's join): until
 * every rank has joined, this rank contributes zeros to the others' allreduces
 * (AVERAGE still divides by the full size). Returns when all ranks have joined, with
 * *last_joined_rank (may be NULL) set to the last rank to join, the same on every
 * rank. device is HVD_DEVICE_CPU or the CUDA ordinal used for the zero buffers. */
HVD_API hvd_status_t hvd_join(int device, int* last_joined_rank);

/* ---------------------------------------------------------------------------------
 * Process sets. Set 0 is the global set. Adding and removing are collective over
 * all ranks (every rank passes the same arguments).
 * ------------------------------------------------------------------------------ */
HVD_API hvd_status_t hvd_add_process_set(const int* ranks, int nranks, int32_t* process_set_id);
HVD_API hvd_status_t hvd_remove_process_set(int32_t process_set_id);
/* Rank of this process in the set, or -1 if not a member / unknown set / not init. */
HVD_API int hvd_process_set_rank(int32_t process_set_id);
/* Number of ranks in the set, or -1 if unknown / not init. */
HVD_API int hvd_process_set_size(int32_t process_set_id);
/* 1 if this rank is in the set, 0 if not, -1 if the set is unknown / not init. */
HVD_API int hvd_process_set_included(int32_t process_set_id);
/* Copies up to capacity member ranks (global ranks, ascending) into ranks and the
 * number of members into *nranks. */
HVD_API hvd_status_t hvd_process_set_ranks(int32_t process_set_id, int* ranks, int capacity,
                                           int* nranks);
/* Copies up to capacity ids of existing sets (ascending) and their number. */
HVD_API hvd_status_t hvd_process_set_ids(int32_t* ids, int capacity, int* count);

/* ---------------------------------------------------------------------------------
 * Timeline (Chrome trace JSON, opened by Perfetto and chrome://tracing)
 * ------------------------------------------------------------------------------ */
HVD_API hvd_status_t hvd_start_timeline(const char* file_path, int mark_cycles);
HVD_API hvd_status_t hvd_stop_timeline(void);

/* ---------------------------------------------------------------------------------
 * Traffic counters: bytes this rank has sent through collectives since init.
 * ------------------------------------------------------------------------------ */
typedef struct hvd_counters {
  size_t struct_size;         /* set by the caller to sizeof(hvd_counters_t) */
  uint64_t global_bytes;      /* over the global (or process-set) communicator */
  uint64_t local_bytes;       /* over the node-local communicator */
  uint64_t cross_bytes;       /* over the cross-node communicator */
  uint64_t collectives;       /* data collectives executed */
  uint64_t negotiation_rounds;/* negotiation rounds run */
  uint64_t speculative;       /* allreduces completed within their negotiation round
                                 (HVD_SPECULATIVE_BYTES), not counted in collectives */
  uint64_t ring_allreduces;   /* of the collectives: fused host allreduces reduced by
                                 libhvd's own ring (HVD_FUSED_RING) */
  uint64_t core_round_trip_ns;/* on a node's local rank 0: the last round trip of a cache
                                 line between the cores of local ranks 0 and 1
                                 (HVD_FAR_CORES), 0 until one is measured */
  uint64_t far_cores;         /* 1 while large allreduces go in calls for cores that
                                 share no cache (HVD_FAR_CORES), alike on every rank */
  uint64_t back_to_back;      /* 1 while every rank's large host allreduces lie back to
                                 back in memory, in place: they are fused and reduced
                                 where they lie (HVD_FUSE_LARGE), alike on every rank */
  uint64_t reserved[3];
} hvd_counters_t;
HVD_API hvd_status_t hvd_get_counters(hvd_counters_t* counters);

/* ---------------------------------------------------------------------------------
 * Step accounting: where each training step's time goes.
 *
 * A step ends when a tensor name already executed in the current step comes back (as
 * Horovod's autotuner counts steps), or, once the framework has called
 * hvd_mark_step(), exactly at each mark (marks then take over from detection for the
 * rest of the run). For every step libhvd records its wall time; the time user
 * threads were blocked waiting on libhvd (hvd_wait and the blocking calls, when the
 * operation was not already done): the communication the framework could not hide
 * behind compute; and the time its background thread spent negotiating, copying
 * tensors in and out of the fusion buffer (and scaling them), and transferring them.
 * The first HVD_STEP_STATS_WARMUP steps (default 1) are left out: they negotiate
 * every tensor by name, allocate buffers and open MPI's connections.
 *
 * On by default (HVD_STEP_STATS=0 turns it off): it costs a clock read at the start
 * and end of each negotiation round, batch and blocking wait. Device operations count
 * the time to queue them on their stream as transfer time, not the GPU's time.
 * With HVD_SUMMARY=1 rank 0 prints a table of the job's steps at hvd_shutdown; with
 * HVD_SUMMARY_FILE=path it writes the same as JSON (docs/features.md, "Step accounting").
 * ------------------------------------------------------------------------------ */
typedef struct hvd_step_stats {
  size_t struct_size;              /* set by the caller: sizeof(hvd_step_stats_t), or use
                                    * HVD_STEP_STATS_INITIALIZER */
  int64_t steps;                   /* steps measured (after the warm-up) */
  int64_t warmup_steps;            /* steps left out at the start (HVD_STEP_STATS_WARMUP) */
  /* The rest are this rank's means per measured step (0 when no step was measured). */
  double step_seconds;             /* wall time of a step */
  double exposed_wait_seconds;     /* user threads blocked waiting on libhvd */
  double negotiate_seconds;        /* background thread in negotiation rounds (this
                                    * includes waiting for other ranks to submit) */
  double copy_seconds;             /* fusion-buffer copies and scaling passes */
  double transfer_seconds;         /* collectives (the rest of executing a batch) */
  int64_t bytes_per_step;          /* tensor bytes reduced, gathered or broadcast */
  double bus_bandwidth;            /* bytes/s, as nccl-tests' busbw: allreduce bytes *
                                    * 2(n-1)/n, allgather, reducescatter and alltoall *
                                    * (n-1)/n, broadcast * 1, over transfer time */
  double reference_bus_bandwidth;  /* raw MPI_Allreduce's busbw on this job's
                                    * communicator for the job's per-step size (at most
                                    * 16 MiB), measured at hvd_shutdown when a summary
                                    * was asked for; 0 until then */
  int enabled;                     /* 1 if step accounting is on (HVD_STEP_STATS) */
  int reserved_pad;                /* zero */
  uint8_t reserved[64];            /* zero; room for later fields */
} hvd_step_stats_t;

#define HVD_STEP_STATS_INITIALIZER { sizeof(hvd_step_stats_t), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0} }

/* Fills *stats with this rank's means over the steps measured so far (struct_size
 * bytes at most; fields beyond an older caller's struct are left alone). Thread-safe;
 * callable from any thread while libhvd runs, and after hvd_shutdown, when it reports
 * the run that ended (with reference_bus_bandwidth if a summary was made).
 * HVD_ERR_INVALID_ARGUMENT: stats is NULL or struct_size is below the first version's
 * size; HVD_ERR_NOT_INITIALIZED: hvd_init never succeeded in this process. */
HVD_API hvd_status_t hvd_get_step_stats(hvd_step_stats_t* stats);

/* The tensors this rank waited on longest over the measured steps (by name, longest
 * first). Copies up to capacity entries into tensors and their number into *count.
 * Names longer than the field are truncated (NUL-terminated). Thread-safe.
 * HVD_ERR_INVALID_ARGUMENT: count is NULL, capacity < 0, or tensors is NULL with
 * capacity > 0; HVD_ERR_NOT_INITIALIZED as hvd_get_step_stats. */
typedef struct hvd_step_tensor {
  char name[128];
  double wait_seconds;             /* per measured step */
} hvd_step_tensor_t;
HVD_API hvd_status_t hvd_get_step_top_tensors(hvd_step_tensor_t* tensors, int capacity,
                                              int* count);

/* Marks the end of a training step (and the start of the next) on this rank, for
 * frameworks that know their steps: call it once per step, at the same point of every
 * step (the torch DistributedOptimizer calls it in step()). From the first call on,
 * steps are the intervals between marks and name-based detection stops. Cheap (a
 * clock read and a short lock), thread-safe, local: no communication.
 * HVD_ERR_NOT_INITIALIZED before hvd_init or after hvd_shutdown. */
HVD_API hvd_status_t hvd_mark_step(void);

/* ---------------------------------------------------------------------------------
 * Version and build
 * ------------------------------------------------------------------------------ */

/* MAJOR * 10000 + MINOR * 100 + PATCH of the library (compare with
 * HVD_VERSION_NUMBER from <hvd/hvd_version.h>). */
HVD_API int hvd_version(void);
HVD_API const char* hvd_version_string(void);

/* 1 if the library was built with the component, else 0. */
HVD_API int hvd_mpi_built(void);
HVD_API int hvd_cuda_built(void);
HVD_API int hvd_nccl_built(void);
HVD_API int hvd_hwloc_built(void);

/* NCCL's version code (MAJOR * 10000 + MINOR * 100 + PATCH for NCCL 2.9 and later,
 * e.g. 21805) when the library was built with NCCL, else 0: the version of the NCCL
 * in the process (the one libhvd loaded, or one another library loaded), else of the
 * NCCL headers libhvd was built with. libhvd links no NCCL: it loads one at the first
 * GPU collective (an NCCL already in the process, else HVD_NCCL_LIBRARY, else
 * libnccl.so.2), and this call never loads it. */
HVD_API int hvd_nccl_version(void);

/* Name of the MPI library the runtime is linked with, e.g. "MPICH 4.0.2". */
HVD_API const char* hvd_mpi_library_version(void);

/* Current value of a configuration knob by its environment name (e.g.
 * "HOROVOD_FUSION_THRESHOLD"), written as text into buf (NUL-terminated, truncated
 * to len). HVD_ERR_INVALID_ARGUMENT for an unknown name. Callable before init
 * (reports the environment and defaults). */
HVD_API hvd_status_t hvd_param_get(const char* name, char* buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* HVD_HVD_H */
