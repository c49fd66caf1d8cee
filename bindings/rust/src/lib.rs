//! Safe Rust wrappers over libhvd's C ABI: init/shutdown, rank queries, and blocking
//! allreduce and broadcast of slices of i32, i64, f32 and f64.

pub mod ffi;

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::c_void;

/// A failed libhvd call: the status code and hvd_last_error()'s detail.
#[derive(Debug, Clone)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "libhvd status {}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}

fn text(ptr: *const std::os::raw::c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: libhvd returns NUL-terminated strings valid until the next call.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

fn check(status: ffi::hvd_status_t) -> Result<(), Error> {
    if status == ffi::HVD_SUCCESS {
        return Ok(());
    }
    // SAFETY: plain queries of thread-local and static text.
    let detail = text(unsafe { ffi::hvd_last_error() });
    let message = if detail.is_empty() {
        text(unsafe { ffi::hvd_status_string(status) })
    } else {
        detail
    };
    Err(Error { status, message })
}

/// Element types that libhvd can reduce.
pub trait Element: Copy {
    const DTYPE: ffi::hvd_dtype_t;
}
impl Element for i32 {
    const DTYPE: ffi::hvd_dtype_t = ffi::HVD_INT32;
}
impl Element for i64 {
    const DTYPE: ffi::hvd_dtype_t = ffi::HVD_INT64;
}
impl Element for f32 {
    const DTYPE: ffi::hvd_dtype_t = ffi::HVD_FLOAT32;
}
impl Element for f64 {
    const DTYPE: ffi::hvd_dtype_t = ffi::HVD_FLOAT64;
}

/// Reduction operations (Horovod's numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Average,
    Sum,
    Min,
    Max,
    Product,
}

impl ReduceOp {
    fn raw(self) -> ffi::hvd_reduce_op_t {
        match self {
            ReduceOp::Average => ffi::HVD_OP_AVERAGE,
            ReduceOp::Sum => ffi::HVD_OP_SUM,
            ReduceOp::Min => ffi::HVD_OP_MIN,
            ReduceOp::Max => ffi::HVD_OP_MAX,
            ReduceOp::Product => ffi::HVD_OP_PRODUCT,
        }
    }
}

fn c_name(name: &str) -> Result<CString, Error> {
    CString::new(name).map_err(|_| Error {
        status: 2,
        message: format!("tensor name {name:?} contains a NUL byte"),
    })
}

/// Initializes libhvd on MPI_COMM_WORLD (idempotent).
pub fn init() -> Result<(), Error> {
    check(unsafe { ffi::hvd_init() })
}

/// Shuts libhvd down; pending operations fail.
pub fn shutdown() -> Result<(), Error> {
    check(unsafe { ffi::hvd_shutdown() })
}

pub fn is_initialized() -> bool {
    unsafe { ffi::hvd_is_initialized() == 1 }
}

/// This process's rank, or None before init.
pub fn rank() -> Option<usize> {
    usize::try_from(unsafe { ffi::hvd_rank() }).ok()
}

/// Number of ranks, or None before init.
pub fn size() -> Option<usize> {
    usize::try_from(unsafe { ffi::hvd_size() }).ok()
}

pub fn local_rank() -> Option<usize> {
    usize::try_from(unsafe { ffi::hvd_local_rank() }).ok()
}

pub fn local_size() -> Option<usize> {
    usize::try_from(unsafe { ffi::hvd_local_size() }).ok()
}

pub fn version() -> String {
    text(unsafe { ffi::hvd_version_string() })
}

/// Reduces `data` in place over the ranks under `name`.
pub fn allreduce_in_place<T: Element>(data: &mut [T], op: ReduceOp, name: &str) -> Result<(), Error> {
    let name = c_name(name)?;
    let ptr = data.as_mut_ptr() as *mut c_void;
    // SAFETY: the buffer holds data.len() elements of T and outlives the blocking call.
    check(unsafe { ffi::hvd_allreduce(ptr, ptr, data.len() as i64, T::DTYPE, op.raw(), name.as_ptr()) })
}

/// Reduces `input` over the ranks into `output` (same length).
pub fn allreduce<T: Element>(input: &[T], output: &mut [T], op: ReduceOp, name: &str) -> Result<(), Error> {
    if input.len() != output.len() {
        return Err(Error {
            status: 2,
            message: format!("input has {} elements, output {}", input.len(), output.len()),
        });
    }
    let name = c_name(name)?;
    // SAFETY: both buffers hold input.len() elements and outlive the blocking call.
    check(unsafe {
        ffi::hvd_allreduce(
            input.as_ptr() as *const c_void,
            output.as_mut_ptr() as *mut c_void,
            input.len() as i64,
            T::DTYPE,
            op.raw(),
            name.as_ptr(),
        )
    })
}

/// Overwrites `data` with root_rank's copy.
pub fn broadcast<T: Element>(data: &mut [T], root_rank: usize, name: &str) -> Result<(), Error> {
    let name = c_name(name)?;
    // SAFETY: the buffer holds data.len() elements and outlives the blocking call.
    check(unsafe {
        ffi::hvd_broadcast(
            data.as_mut_ptr() as *mut c_void,
            data.len() as i64,
            T::DTYPE,
            root_rank as i32,
            name.as_ptr(),
        )
    })
}
