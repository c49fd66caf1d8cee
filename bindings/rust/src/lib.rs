//! Safe Rust wrappers over libhvd's C ABI (include/hvd/hvd.h), with no
//! dependencies. `ffi` declares the whole header by hand (checked against it at
//! build time). The safe layer covers:
//!
//! - life cycle and queries: `init`, `init_with_process_sets`, `shutdown`, `rank`,
//!   `size`, local and cross ranks, `is_homogeneous`, version and build information,
//!   `param`;
//! - blocking collectives over slices of `Element`s (u8, i8, u16, i16, i32, i64,
//!   f32, f64, `F16`, `Bf16`): `allreduce`, `allreduce_in_place`, `broadcast`
//!   (and `_with` forms taking `Options`), `grouped_allreduce`, `allgather`,
//!   `alltoall`, `reducescatter`, `barrier`, `join`;
//! - the same asynchronously in a `scope`, through `Handle`s (poll, wait; a dropped
//!   handle waits);
//! - process sets (`ProcessSet`), traffic counters and step accounting, timeline.
//!
//! Errors carry libhvd's status and hvd_last_error()'s text. Arguments this crate
//! refuses itself (lengths that disagree, a NUL in a name, a root outside the
//! process set) give `Status::InvalidArgument` with a message in Rust terms, and the
//! other ranks' matching call fails with `Status::Mismatch` instead of hanging.
//!
//! Not wrapped (declared in `ffi` only): device (CUDA) buffers and streams, custom
//! output allocators, grouped allgather and reducescatter, tensor shapes beyond
//! rows of `row_len` elements, `hvd_alloc_host`/`hvd_advise_host`, HVD_BOOL.

pub mod ffi;

mod buffer;
mod collectives;
mod counters;
mod element;
mod error;
mod handle;
mod ops;
mod options;
mod process_set;
mod runtime;
mod timeline;

pub use buffer::{Buffer, Gathered};
pub use collectives::{
    allgather, allreduce, allreduce_in_place, allreduce_in_place_with, allreduce_with, alltoall,
    barrier, broadcast, broadcast_with, grouped_allreduce, join, reducescatter, reducescatter_rows,
};
pub use counters::{counters, mark_step, step_stats, step_top_tensors, Counters, StepStats, TensorWait};
pub use element::{Bf16, Element, ReduceOp, F16};
pub use error::{Error, Result, Status};
pub use handle::{scope, Handle, Scope};
pub use options::Options;
pub use process_set::{init_with_process_sets, process_sets, ProcessSet};
pub use runtime::{
    build_info, cross_rank, cross_size, gpu_device, init, is_homogeneous, is_initialized, local_rank,
    local_size, mpi_library_version, param, rank, shutdown, size, version, version_number, BuildInfo,
};
pub use timeline::{start_timeline, stop_timeline};
