//! Declarations of the subset of include/hvd/hvd.h this crate uses, by hand.
//! Values and layouts must match the header exactly.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

pub type hvd_status_t = c_int;
pub type hvd_dtype_t = c_int;
pub type hvd_reduce_op_t = c_int;
pub type hvd_handle_t = i64;

pub const HVD_SUCCESS: hvd_status_t = 0;

pub const HVD_INT32: hvd_dtype_t = 4;
pub const HVD_INT64: hvd_dtype_t = 5;
pub const HVD_FLOAT32: hvd_dtype_t = 8;
pub const HVD_FLOAT64: hvd_dtype_t = 9;

pub const HVD_OP_AVERAGE: hvd_reduce_op_t = 0;
pub const HVD_OP_SUM: hvd_reduce_op_t = 1;
pub const HVD_OP_MIN: hvd_reduce_op_t = 3;
pub const HVD_OP_MAX: hvd_reduce_op_t = 4;
pub const HVD_OP_PRODUCT: hvd_reduce_op_t = 5;

extern "C" {
    pub fn hvd_init() -> hvd_status_t;
    pub fn hvd_shutdown() -> hvd_status_t;
    pub fn hvd_is_initialized() -> c_int;
    pub fn hvd_rank() -> c_int;
    pub fn hvd_size() -> c_int;
    pub fn hvd_local_rank() -> c_int;
    pub fn hvd_local_size() -> c_int;
    pub fn hvd_status_string(status: hvd_status_t) -> *const c_char;
    pub fn hvd_last_error() -> *const c_char;
    pub fn hvd_version_string() -> *const c_char;
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
}
