//! Declarations of include/hvd/hvd.h, written by hand (no bindgen, no registry
//! crates). Every constant, every struct and every function here must match the
//! header exactly: build.rs compiles `_Static_assert`s generated from this file
//! against the header (values, struct sizes and field offsets, function types) and
//! fails the build where they differ. Read hvd.h for each function's contract.
//!
//! Not declared: nothing of hvd.h is left out; MPI types (hvd_mpi.h,
//! `hvd_init_comm`) are outside this crate.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_double, c_int, c_void};

/// The C enums are `int`-sized; their values are passed as plain integers.
pub type hvd_status_t = c_int;
pub type hvd_dtype_t = c_int;
pub type hvd_reduce_op_t = c_int;
pub type hvd_handle_t = i64;

// Status codes (HVD_STATUS_MAP). Pinned values.
pub const HVD_SUCCESS: hvd_status_t = 0;
pub const HVD_ERR_NOT_INITIALIZED: hvd_status_t = 1;
pub const HVD_ERR_INVALID_ARGUMENT: hvd_status_t = 2;
pub const HVD_ERR_MISMATCH: hvd_status_t = 3;
pub const HVD_ERR_DUPLICATE_NAME: hvd_status_t = 4;
pub const HVD_ERR_SHUT_DOWN: hvd_status_t = 5;
pub const HVD_ERR_TIMEOUT: hvd_status_t = 6;
pub const HVD_ERR_UNSUPPORTED: hvd_status_t = 7;
pub const HVD_ERR_MPI: hvd_status_t = 8;
pub const HVD_ERR_CUDA: hvd_status_t = 9;
pub const HVD_ERR_NCCL: hvd_status_t = 10;
pub const HVD_ERR_NO_MEMORY: hvd_status_t = 11;
pub const HVD_ERR_INTERNAL: hvd_status_t = 12;

// Element types.
pub const HVD_UINT8: hvd_dtype_t = 0;
pub const HVD_INT8: hvd_dtype_t = 1;
pub const HVD_UINT16: hvd_dtype_t = 2;
pub const HVD_INT16: hvd_dtype_t = 3;
pub const HVD_INT32: hvd_dtype_t = 4;
pub const HVD_INT64: hvd_dtype_t = 5;
pub const HVD_FLOAT16: hvd_dtype_t = 6;
pub const HVD_BFLOAT16: hvd_dtype_t = 7;
pub const HVD_FLOAT32: hvd_dtype_t = 8;
pub const HVD_FLOAT64: hvd_dtype_t = 9;
pub const HVD_BOOL: hvd_dtype_t = 10;

// Reduction operations (Horovod's numbering).
pub const HVD_OP_AVERAGE: hvd_reduce_op_t = 0;
pub const HVD_OP_SUM: hvd_reduce_op_t = 1;
pub const HVD_OP_ADASUM: hvd_reduce_op_t = 2;
pub const HVD_OP_MIN: hvd_reduce_op_t = 3;
pub const HVD_OP_MAX: hvd_reduce_op_t = 4;
pub const HVD_OP_PRODUCT: hvd_reduce_op_t = 5;

pub const HVD_DEVICE_CPU: c_int = -1;
pub const HVD_GLOBAL_PROCESS_SET: i32 = 0;
pub const HVD_MAX_NDIM: c_int = 32;

/// Allocator for outputs of unknown size; called on libhvd's background thread.
pub type hvd_allocator_fn =
    Option<unsafe extern "C" fn(nbytes: usize, device: c_int, user_data: *mut c_void) -> *mut c_void>;

/// Per-operation options; fill with `hvd_op_options_init` before changing fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hvd_op_options_t {
    pub struct_size: usize,
    pub prescale_factor: c_double,
    pub postscale_factor: c_double,
    pub device: i32,
    pub process_set_id: i32,
    pub stream: *mut c_void,
    pub allocator: hvd_allocator_fn,
    pub allocator_user_data: *mut c_void,
    pub shape: *const i64,
    pub ndim: i32,
    pub reserved_pad: i32,
    pub reserved: [u8; 48],
}

/// Traffic counters; set `struct_size` to `size_of::<hvd_counters_t>()` first.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct hvd_counters_t {
    pub struct_size: usize,
    pub global_bytes: u64,
    pub local_bytes: u64,
    pub cross_bytes: u64,
    pub collectives: u64,
    pub negotiation_rounds: u64,
    pub speculative: u64,
    pub ring_allreduces: u64,
    pub core_round_trip_ns: u64,
    pub far_cores: u64,
    pub back_to_back: u64,
    pub reserved: [u64; 3],
}

/// Step accounting; set `struct_size` to `size_of::<hvd_step_stats_t>()` first.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hvd_step_stats_t {
    pub struct_size: usize,
    pub steps: i64,
    pub warmup_steps: i64,
    pub step_seconds: c_double,
    pub exposed_wait_seconds: c_double,
    pub negotiate_seconds: c_double,
    pub copy_seconds: c_double,
    pub transfer_seconds: c_double,
    pub bytes_per_step: i64,
    pub bus_bandwidth: c_double,
    pub reference_bus_bandwidth: c_double,
    pub enabled: c_int,
    pub reserved_pad: c_int,
    pub reserved: [u8; 64],
}

/// One entry of `hvd_get_step_top_tensors`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hvd_step_tensor_t {
    pub name: [c_char; 128],
    pub wait_seconds: c_double,
}

extern "C" {
    // Options.
    pub fn hvd_op_options_init(options: *mut hvd_op_options_t) -> hvd_status_t;

    // Life cycle and queries.
    pub fn hvd_init() -> hvd_status_t;
    pub fn hvd_init_with_process_sets(
        nsets: c_int,
        ranks: *const *const c_int,
        nranks: *const c_int,
    ) -> hvd_status_t;
    pub fn hvd_shutdown() -> hvd_status_t;
    pub fn hvd_is_initialized() -> c_int;
    pub fn hvd_rank() -> c_int;
    pub fn hvd_size() -> c_int;
    pub fn hvd_local_rank() -> c_int;
    pub fn hvd_local_size() -> c_int;
    pub fn hvd_cross_rank() -> c_int;
    pub fn hvd_cross_size() -> c_int;
    pub fn hvd_is_homogeneous() -> c_int;
    pub fn hvd_gpu_device() -> c_int;
    pub fn hvd_status_string(status: hvd_status_t) -> *const c_char;
    pub fn hvd_last_error() -> *const c_char;

    // Allreduce and broadcast.
    pub fn hvd_allreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: i64,
        dtype: hvd_dtype_t,
        op: hvd_reduce_op_t,
        name: *const c_char,
    ) -> hvd_status_t;
    pub fn hvd_broadcast(
        buffer: *mut c_void,
        count: i64,
        dtype: hvd_dtype_t,
        root_rank: c_int,
        name: *const c_char,
    ) -> hvd_status_t;
    pub fn hvd_allreduce_async(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: i64,
        dtype: hvd_dtype_t,
        op: hvd_reduce_op_t,
        name: *const c_char,
        options: *const hvd_op_options_t,
        handle: *mut hvd_handle_t,
    ) -> hvd_status_t;
    pub fn hvd_broadcast_async(
        buffer: *mut c_void,
        count: i64,
        dtype: hvd_dtype_t,
        root_rank: c_int,
        name: *const c_char,
        options: *const hvd_op_options_t,
        handle: *mut hvd_handle_t,
    ) -> hvd_status_t;
    pub fn hvd_grouped_allreduce(
        ntensors: c_int,
        sendbufs: *const *const c_void,
        recvbufs: *const *mut c_void,
        counts: *const i64,
        dtype: hvd_dtype_t,
        op: hvd_reduce_op_t,
        name: *const c_char,
        options: *const hvd_op_options_t,
    ) -> hvd_status_t;
    pub fn hvd_grouped_allreduce_async(
        ntensors: c_int,
        sendbufs: *const *const c_void,
        recvbufs: *const *mut c_void,
        counts: *const i64,
        dtype: hvd_dtype_t,
        op: hvd_reduce_op_t,
        name: *const c_char,
        options: *const hvd_op_options_t,
        handle: *mut hvd_handle_t,
    ) -> hvd_status_t;

    // Allgather, alltoall, reducescatter. Outputs of unknown size (*recvbuf) are
    // allocated by libhvd (release with hvd_free) or by options->allocator.
    pub fn hvd_allgather(
        sendbuf: *const c_void,
        ndim: c_int,
        shape: *const i64,
        dtype: hvd_dtype_t,
        recvbuf: *mut *mut c_void,
        recv_dim0: *mut i64,
        recv_dim0_per_rank: *mut i64,
        name: *const c_char,
        options: *const hvd_op_options_t,
    ) -> hvd_status_t;
    pub fn hvd_allgather_async(
        sendbuf: *const c_void,
        ndim: c_int,
        shape: *const i64,
        dtype: hvd_dtype_t,
        recvbuf: *mut *mut c_void,
        recv_dim0: *mut i64,
        recv_dim0_per_rank: *mut i64,
        name: *const c_char,
        options: *const hvd_op_options_t,
        handle: *mut hvd_handle_t,
    ) -> hvd_status_t;
    pub fn hvd_alltoall(
        sendbuf: *const c_void,
        ndim: c_int,
        shape: *const i64,
        dtype: hvd_dtype_t,
        send_splits: *const i64,
        recvbuf: *mut *mut c_void,
        recv_dim0: *mut i64,
        recv_splits: *mut i64,
        name: *const c_char,
        options: *const hvd_op_options_t,
    ) -> hvd_status_t;
    pub fn hvd_alltoall_async(
        sendbuf: *const c_void,
        ndim: c_int,
        shape: *const i64,
        dtype: hvd_dtype_t,
        send_splits: *const i64,
        recvbuf: *mut *mut c_void,
        recv_dim0: *mut i64,
        recv_splits: *mut i64,
        name: *const c_char,
        options: *const hvd_op_options_t,
        handle: *mut hvd_handle_t,
    ) -> hvd_status_t;
    pub fn hvd_reducescatter(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        ndim: c_int,
        shape: *const i64,
        dtype: hvd_dtype_t,
        op: hvd_reduce_op_t,
        name: *const c_char,
        options: *const hvd_op_options_t,
    ) -> hvd_status_t;
    pub fn hvd_reducescatter_async(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        ndim: c_int,
        shape: *const i64,
        dtype: hvd_dtype_t,
        op: hvd_reduce_op_t,
        name: *const c_char,
        options: *const hvd_op_options_t,
        handle: *mut hvd_handle_t,
    ) -> hvd_status_t;
    pub fn hvd_grouped_allgather(
        ntensors: c_int,
        sendbufs: *const *const c_void,
        ndims: *const c_int,
        shapes: *const *const i64,
        dtype: hvd_dtype_t,
        recvbufs: *mut *mut c_void,
        recv_dim0s: *mut i64,
        recv_dim0_per_rank: *mut i64,
        name: *const c_char,
        options: *const hvd_op_options_t,
    ) -> hvd_status_t;
    pub fn hvd_grouped_allgather_async(
        ntensors: c_int,
        sendbufs: *const *const c_void,
        ndims: *const c_int,
        shapes: *const *const i64,
        dtype: hvd_dtype_t,
        recvbufs: *mut *mut c_void,
        recv_dim0s: *mut i64,
        recv_dim0_per_rank: *mut i64,
        name: *const c_char,
        options: *const hvd_op_options_t,
        handle: *mut hvd_handle_t,
    ) -> hvd_status_t;
    pub fn hvd_grouped_reducescatter(
        ntensors: c_int,
        sendbufs: *const *const c_void,
        recvbufs: *const *mut c_void,
        ndims: *const c_int,
        shapes: *const *const i64,
        dtype: hvd_dtype_t,
        op: hvd_reduce_op_t,
        name: *const c_char,
        options: *const hvd_op_options_t,
    ) -> hvd_status_t;
    pub fn hvd_grouped_reducescatter_async(
        ntensors: c_int,
        sendbufs: *const *const c_void,
        recvbufs: *const *mut c_void,
        ndims: *const c_int,
        shapes: *const *const i64,
        dtype: hvd_dtype_t,
        op: hvd_reduce_op_t,
        name: *const c_char,
        options: *const hvd_op_options_t,
        handle: *mut hvd_handle_t,
    ) -> hvd_status_t;
    pub fn hvd_reducescatter_rows(dim0: i64, set_rank: c_int, set_size: c_int) -> i64;

    // A collective refused by the binding before calling libhvd.
    pub fn hvd_refuse(
        op: *const c_char,
        name: *const c_char,
        ntensors: c_int,
        options: *const hvd_op_options_t,
        reason: *const c_char,
    ) -> hvd_status_t;

    // Memory.
    pub fn hvd_free(ptr: *mut c_void);
    pub fn hvd_alloc_host(nbytes: usize, ptr: *mut *mut c_void) -> hvd_status_t;
    pub fn hvd_advise_host(ptr: *mut c_void, nbytes: usize, advised: *mut usize) -> hvd_status_t;

    // Handles.
    pub fn hvd_poll(handle: hvd_handle_t, done: *mut c_int) -> hvd_status_t;
    pub fn hvd_wait(handle: hvd_handle_t) -> hvd_status_t;
    pub fn hvd_stream_wait(handle: hvd_handle_t, stream: *mut c_void) -> hvd_status_t;

    // Synchronization.
    pub fn hvd_barrier(process_set_id: i32) -> hvd_status_t;
    pub fn hvd_join(device: c_int, last_joined_rank: *mut c_int) -> hvd_status_t;

    // Process sets.
    pub fn hvd_add_process_set(ranks: *const c_int, nranks: c_int, process_set_id: *mut i32)
        -> hvd_status_t;
    pub fn hvd_remove_process_set(process_set_id: i32) -> hvd_status_t;
    pub fn hvd_process_set_rank(process_set_id: i32) -> c_int;
    pub fn hvd_process_set_size(process_set_id: i32) -> c_int;
    pub fn hvd_process_set_included(process_set_id: i32) -> c_int;
    pub fn hvd_process_set_ranks(
        process_set_id: i32,
        ranks: *mut c_int,
        capacity: c_int,
        nranks: *mut c_int,
    ) -> hvd_status_t;
    pub fn hvd_process_set_ids(ids: *mut i32, capacity: c_int, count: *mut c_int) -> hvd_status_t;

    // Timeline.
    pub fn hvd_start_timeline(file_path: *const c_char, mark_cycles: c_int) -> hvd_status_t;
    pub fn hvd_stop_timeline() -> hvd_status_t;

    // Counters and step accounting.
    pub fn hvd_get_counters(counters: *mut hvd_counters_t) -> hvd_status_t;
    pub fn hvd_get_step_stats(stats: *mut hvd_step_stats_t) -> hvd_status_t;
    pub fn hvd_get_step_top_tensors(
        tensors: *mut hvd_step_tensor_t,
        capacity: c_int,
        count: *mut c_int,
    ) -> hvd_status_t;
    pub fn hvd_mark_step() -> hvd_status_t;

    // Version and build.
    pub fn hvd_version() -> c_int;
    pub fn hvd_version_string() -> *const c_char;
    pub fn hvd_mpi_built() -> c_int;
    pub fn hvd_cuda_built() -> c_int;
    pub fn hvd_nccl_built() -> c_int;
    pub fn hvd_hwloc_built() -> c_int;
    pub fn hvd_nccl_version() -> c_int;
    pub fn hvd_mpi_library_version() -> *const c_char;
    pub fn hvd_param_get(name: *const c_char, buf: *mut c_char, len: usize) -> hvd_status_t;
}
