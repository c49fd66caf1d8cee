//! Errors: libhvd's status with hvd_last_error()'s detail, and the binding's own
//! refusals of arguments (reported as `Status::InvalidArgument`, in Rust terms).
use crate::ffi;
use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_char;

/// libhvd's status codes (hvd.h, HVD_STATUS_MAP), without `HVD_SUCCESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    NotInitialized,
    InvalidArgument,
    Mismatch,
    DuplicateName,
    ShutDown,
    Timeout,
    Unsupported,
    Mpi,
    Cuda,
    Nccl,
    NoMemory,
    Internal,
    /// A code this crate does not know (a newer library).
    Other(i32),
}

impl Status {
    pub fn from_raw(status: ffi::hvd_status_t) -> Status {
        match status {
            ffi::HVD_ERR_NOT_INITIALIZED => Status::NotInitialized,
            ffi::HVD_ERR_INVALID_ARGUMENT => Status::InvalidArgument,
            ffi::HVD_ERR_MISMATCH => Status::Mismatch,
            ffi::HVD_ERR_DUPLICATE_NAME => Status::DuplicateName,
            ffi::HVD_ERR_SHUT_DOWN => Status::ShutDown,
            ffi::HVD_ERR_TIMEOUT => Status::Timeout,
            ffi::HVD_ERR_UNSUPPORTED => Status::Unsupported,
            ffi::HVD_ERR_MPI => Status::Mpi,
            ffi::HVD_ERR_CUDA => Status::Cuda,
            ffi::HVD_ERR_NCCL => Status::Nccl,
            ffi::HVD_ERR_NO_MEMORY => Status::NoMemory,
            ffi::HVD_ERR_INTERNAL => Status::Internal,
            other => Status::Other(other),
        }
    }

    pub fn raw(self) -> ffi::hvd_status_t {
        match self {
            Status::NotInitialized => ffi::HVD_ERR_NOT_INITIALIZED,
            Status::InvalidArgument => ffi::HVD_ERR_INVALID_ARGUMENT,
            Status::Mismatch => ffi::HVD_ERR_MISMATCH,
            Status::DuplicateName => ffi::HVD_ERR_DUPLICATE_NAME,
            Status::ShutDown => ffi::HVD_ERR_SHUT_DOWN,
            Status::Timeout => ffi::HVD_ERR_TIMEOUT,
            Status::Unsupported => ffi::HVD_ERR_UNSUPPORTED,
            Status::Mpi => ffi::HVD_ERR_MPI,
            Status::Cuda => ffi::HVD_ERR_CUDA,
            Status::Nccl => ffi::HVD_ERR_NCCL,
            Status::NoMemory => ffi::HVD_ERR_NO_MEMORY,
            Status::Internal => ffi::HVD_ERR_INTERNAL,
            Status::Other(code) => code,
        }
    }

    /// The fixed sentence of hvd_status_string() for this code.
    pub fn description(self) -> String {
        // SAFETY: returns static text, never NULL.
        text(unsafe { ffi::hvd_status_string(self.raw()) })
    }
}

/// A failed call: the status code and the detail (hvd_last_error(), or the
/// binding's own sentence for an argument it refused before calling libhvd).
#[derive(Debug, Clone)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

impl Error {
    pub fn kind(&self) -> Status {
        Status::from_raw(self.status)
    }

    pub(crate) fn invalid(message: String) -> Error {
        Error { status: ffi::HVD_ERR_INVALID_ARGUMENT, message }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "libhvd status {} ({:?}): {}", self.status, self.kind(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: libhvd returns NUL-terminated strings valid until its next call.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

/// Turns a status into a Result, reading hvd_last_error() on failure.
pub(crate) fn check(status: ffi::hvd_status_t) -> Result<()> {
    if status == ffi::HVD_SUCCESS {
        return Ok(());
    }
    // SAFETY: plain queries of thread-local and static text.
    let detail = text(unsafe { ffi::hvd_last_error() });
    let message =
        if detail.is_empty() { text(unsafe { ffi::hvd_status_string(status) }) } else { detail };
    Err(Error { status, message })
}
