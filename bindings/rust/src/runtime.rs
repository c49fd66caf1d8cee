//! Life cycle, rank queries, version and build information, configuration knobs.
use crate::error::{check, text, Error, Result};
use crate::ffi;
use std::ffi::CString;
use std::os::raw::c_char;

/// Initializes libhvd on MPI_COMM_WORLD (idempotent; collective over all ranks).
pub fn init() -> Result<()> {
    check(unsafe { ffi::hvd_init() })
}

/// Shuts libhvd down; pending operations fail with `Status::ShutDown`. Every rank
/// should call it.
pub fn shutdown() -> Result<()> {
    check(unsafe { ffi::hvd_shutdown() })
}

pub fn is_initialized() -> bool {
    unsafe { ffi::hvd_is_initialized() == 1 }
}

fn query(value: i32) -> Option<usize> {
    usize::try_from(value).ok()
}

/// This process's rank, or None before init.
pub fn rank() -> Option<usize> {
    query(unsafe { ffi::hvd_rank() })
}

/// Number of ranks, or None before init.
pub fn size() -> Option<usize> {
    query(unsafe { ffi::hvd_size() })
}

/// Rank among the ranks of this node.
pub fn local_rank() -> Option<usize> {
    query(unsafe { ffi::hvd_local_rank() })
}

pub fn local_size() -> Option<usize> {
    query(unsafe { ffi::hvd_local_size() })
}

/// Rank among the ranks with this rank's local rank, one per node.
pub fn cross_rank() -> Option<usize> {
    query(unsafe { ffi::hvd_cross_rank() })
}

pub fn cross_size() -> Option<usize> {
    query(unsafe { ffi::hvd_cross_size() })
}

/// Whether every node runs the same number of ranks; None before init.
pub fn is_homogeneous() -> Option<bool> {
    match unsafe { ffi::hvd_is_homogeneous() } {
        1 => Some(true),
        0 => Some(false),
        _ => None,
    }
}

/// The CUDA device this rank was pinned to, if any.
pub fn gpu_device() -> Option<i32> {
    let device = unsafe { ffi::hvd_gpu_device() };
    if device >= 0 { Some(device) } else { None }
}

/// The library's version, e.g. "0.1.0".
pub fn version() -> String {
    text(unsafe { ffi::hvd_version_string() })
}

/// MAJOR * 10000 + MINOR * 100 + PATCH.
pub fn version_number() -> i32 {
    unsafe { ffi::hvd_version() }
}

/// Name of the MPI library the runtime is linked with.
pub fn mpi_library_version() -> String {
    text(unsafe { ffi::hvd_mpi_library_version() })
}

/// What the library was built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildInfo {
    pub mpi: bool,
    pub cuda: bool,
    pub nccl: bool,
    pub hwloc: bool,
    /// NCCL's version code, 0 without NCCL.
    pub nccl_version: i32,
}

pub fn build_info() -> BuildInfo {
    unsafe {
        BuildInfo {
            mpi: ffi::hvd_mpi_built() == 1,
            cuda: ffi::hvd_cuda_built() == 1,
            nccl: ffi::hvd_nccl_built() == 1,
            hwloc: ffi::hvd_hwloc_built() == 1,
            nccl_version: ffi::hvd_nccl_version(),
        }
    }
}

/// Current value of a configuration knob by its environment name (e.g.
/// "HOROVOD_FUSION_THRESHOLD"); callable before init.
pub fn param(name: &str) -> Result<String> {
    let c = CString::new(name)
        .map_err(|_| Error::invalid(format!("param: name {name:?} contains a NUL byte")))?;
    let mut buf = vec![0 as c_char; 4096];
    // SAFETY: buf holds len bytes; libhvd NUL-terminates within them.
    check(unsafe { ffi::hvd_param_get(c.as_ptr(), buf.as_mut_ptr(), buf.len()) })?;
    Ok(text(buf.as_ptr()))
}
