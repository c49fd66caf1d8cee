//! The timeline: a Chrome trace of negotiation and execution per tensor, recorded
//! by rank 0 (the call succeeds and records nothing on the other ranks).
use crate::error::{check, Error, Result};
use crate::ffi;
use std::ffi::CString;
use std::path::Path;

pub fn start_timeline(path: &Path, mark_cycles: bool) -> Result<()> {
    let text = path.to_str().ok_or_else(|| {
        Error::invalid(format!("start_timeline: path {} is not valid UTF-8", path.display()))
    })?;
    let c = CString::new(text)
        .map_err(|_| Error::invalid(format!("start_timeline: path {text:?} contains a NUL byte")))?;
    check(unsafe { ffi::hvd_start_timeline(c.as_ptr(), mark_cycles as i32) })
}

pub fn stop_timeline() -> Result<()> {
    check(unsafe { ffi::hvd_stop_timeline() })
}
