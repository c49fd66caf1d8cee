//! Outputs that libhvd allocated (allgather, alltoall): owned, freed with hvd_free.
use crate::element::Element;
use crate::ffi;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// `len` elements in memory allocated by libhvd; dereferences to a slice and
/// releases the memory with hvd_free when dropped.
pub struct Buffer<T: Element> {
    ptr: NonNull<T>,
    len: usize,
    owned: bool,
}

// SAFETY: the buffer owns its memory exclusively, like a Vec<T>.
unsafe impl<T: Element> Send for Buffer<T> {}
unsafe impl<T: Element> Sync for Buffer<T> {}

impl<T: Element> Buffer<T> {
    /// SAFETY: ptr is NULL (then len must be 0) or libhvd's allocation of at least
    /// len initialized elements of T, owned by nobody else.
    pub(crate) unsafe fn from_raw(ptr: *mut T, len: usize) -> Buffer<T> {
        match NonNull::new(ptr) {
            Some(ptr) => Buffer { ptr, len, owned: true },
            None => Buffer { ptr: NonNull::dangling(), len: 0, owned: false },
        }
    }
}

impl<T: Element> Deref for Buffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: see from_raw.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> DerefMut for Buffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: see from_raw; self is borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> Drop for Buffer<T> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: libhvd allocated it, and it is freed once.
            unsafe { ffi::hvd_free(self.ptr.as_ptr() as *mut _) }
        }
    }
}

impl<T: Element + fmt::Debug> fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The result of an allgather or alltoall: the rows received, in rank order of the
/// process set, and how many came from each set rank.
#[derive(Debug)]
pub struct Gathered<T: Element> {
    pub data: Buffer<T>,
    /// Total rows (data.len() / row_len).
    pub rows: usize,
    /// Rows contributed by (allgather) or received from (alltoall) each set rank.
    pub rows_per_rank: Vec<usize>,
}
