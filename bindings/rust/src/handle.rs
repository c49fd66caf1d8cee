//! Asynchronous collectives: `scope` and the `Handle`s it hands out.
//!
//! A handle borrows its buffers for the scope's lifetime `'scope`, so the borrow
//! checker keeps them from being read, changed or freed while libhvd may still use
//! them. `Handle::wait` gives the output borrow back (or the owned result). A handle
//! dropped without `wait` waits in its `Drop`; one leaked with `mem::forget` is
//! waited when the scope ends, before its buffers can be reached again, so libhvd
//! never writes into memory Rust has handed back. As with `std::thread::scope`,
//! buffers are declared outside the scope:
//!
//! ```no_run
//! let input = vec![1.0f32; 4];
//! let mut output = vec![0.0f32; 4];
//! hvd::scope(|s| -> Result<(), hvd::Error> {
//!     let h = s.allreduce(&input, &mut output, hvd::ReduceOp::Sum, "grad", &hvd::Options::new())?;
//!     while !h.poll()? { /* compute */ }
//!     let reduced = h.wait()?;
//!     assert_eq!(reduced.len(), 4);
//!     Ok(())
//! })?;
//! # Ok::<(), hvd::Error>(())
//! ```
use crate::buffer::Gathered;
use crate::element::{Element, ReduceOp};
use crate::error::{check, Result};
use crate::ffi;
use crate::ops::{self, Op};
use crate::options::Options;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

/// Where asynchronous collectives are started; see `scope`.
pub struct Scope<'scope, 'env: 'scope> {
    pending: Mutex<Vec<ffi::hvd_handle_t>>,
    // Invariant in both lifetimes, as std::thread::Scope: buffers borrowed from
    // outside the scope ('env) for 'scope.
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

/// Runs `f` with a `Scope`; every operation started in it has completed when
/// `scope` returns (or unwinds).
pub fn scope<'env, F, R>(f: F) -> R
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
{
    let s = Scope { pending: Mutex::new(Vec::new()), _scope: PhantomData, _env: PhantomData };
    let result = panic::catch_unwind(AssertUnwindSafe(|| f(&s)));
    s.wait_leaked();
    match result {
        Ok(r) => r,
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// An operation in flight. `wait` returns its result; dropping it waits too.
#[must_use = "an operation is waited for when its handle is dropped"]
pub struct Handle<'scope, R> {
    op: Option<Op<'scope, R>>,
    pending: &'scope Mutex<Vec<ffi::hvd_handle_t>>,
}

impl<'scope, R> Handle<'scope, R> {
    /// True when the operation has completed (wait will not block).
    pub fn poll(&self) -> Result<bool> {
        let raw = self.op.as_ref().expect("handle not yet waited").raw;
        let mut done = 0;
        // SAFETY: raw is a live handle; done is a valid out-pointer.
        check(unsafe { ffi::hvd_poll(raw, &mut done) })?;
        Ok(done != 0)
    }

    /// Waits for completion and returns the output (the borrowed output slice, or
    /// the owned result of an allgather, alltoall or reducescatter).
    pub fn wait(mut self) -> Result<R> {
        let op = self.op.take().expect("handle not yet waited");
        forget(self.pending, op.raw);
        op.wait()
    }
}

impl<'scope, R> Drop for Handle<'scope, R> {
    fn drop(&mut self) {
        if let Some(op) = self.op.take() {
            forget(self.pending, op.raw);
            let _ = op.wait();
        }
    }
}

fn forget(pending: &Mutex<Vec<ffi::hvd_handle_t>>, raw: ffi::hvd_handle_t) {
    pending.lock().unwrap_or_else(|e| e.into_inner()).retain(|&h| h != raw);
}

impl<'scope, 'env> Scope<'scope, 'env> {
    fn track<R>(&'scope self, op: Op<'scope, R>) -> Handle<'scope, R> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).push(op.raw);
        Handle { op: Some(op), pending: &self.pending }
    }

    /// Waits the operations of handles that were leaked (mem::forget).
    fn wait_leaked(&self) {
        let leaked = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for raw in leaked {
            // SAFETY: a live handle nobody else waits for any more.
            unsafe { ffi::hvd_wait(raw) };
        }
    }

    /// Starts an allreduce of `input` into `output` (same length).
    pub fn allreduce<T: Element>(
        &'scope self,
        input: &'scope [T],
        output: &'scope mut [T],
        op: ReduceOp,
        name: &str,
        opts: &Options,
    ) -> Result<Handle<'scope, &'scope mut [T]>> {
        Ok(self.track(ops::allreduce(input, output, op, name, opts)?))
    }

    /// Starts an allreduce of `data` in place.
    pub fn allreduce_in_place<T: Element>(
        &'scope self,
        data: &'scope mut [T],
        op: ReduceOp,
        name: &str,
        opts: &Options,
    ) -> Result<Handle<'scope, &'scope mut [T]>> {
        Ok(self.track(ops::allreduce_in_place(data, op, name, opts)?))
    }

    /// Starts a broadcast of root_rank's (a global rank's) `data` into every rank's.
    pub fn broadcast<T: Element>(
        &'scope self,
        data: &'scope mut [T],
        root_rank: usize,
        name: &str,
        opts: &Options,
    ) -> Result<Handle<'scope, &'scope mut [T]>> {
        Ok(self.track(ops::broadcast(data, root_rank, name, opts)?))
    }

    /// Starts a grouped allreduce: tensor i from `inputs[i]` into `outputs[i]`, fused as
    /// one unit; members are named `"<name>.<i>"`.
    pub fn grouped_allreduce<T: Element>(
        &'scope self,
        inputs: &[&'scope [T]],
        outputs: Vec<&'scope mut [T]>,
        op: ReduceOp,
        name: &str,
        opts: &Options,
    ) -> Result<Handle<'scope, Vec<&'scope mut [T]>>> {
        Ok(self.track(ops::grouped_allreduce(inputs, outputs, op, name, opts)?))
    }

    /// Starts an allgather of `input`'s rows of `row_len` elements.
    pub fn allgather<T: Element>(
        &'scope self,
        input: &'scope [T],
        row_len: usize,
        name: &str,
        opts: &Options,
    ) -> Result<Handle<'scope, Gathered<T>>> {
        Ok(self.track(ops::allgather(input, row_len, name, opts)?))
    }

    /// Starts an alltoall: `send_splits[r]` rows to set rank r (None: evenly).
    pub fn alltoall<T: Element>(
        &'scope self,
        input: &'scope [T],
        row_len: usize,
        send_splits: Option<&[usize]>,
        name: &str,
        opts: &Options,
    ) -> Result<Handle<'scope, Gathered<T>>> {
        Ok(self.track(ops::alltoall(input, row_len, send_splits, name, opts)?))
    }

    /// Starts a reducescatter (any op but Adasum) of `input`'s rows; the result is
    /// this rank's block of rows.
    pub fn reducescatter<T: Element>(
        &'scope self,
        input: &'scope [T],
        row_len: usize,
        op: ReduceOp,
        name: &str,
        opts: &Options,
    ) -> Result<Handle<'scope, Vec<T>>> {
        Ok(self.track(ops::reducescatter(input, row_len, op, name, opts)?))
    }
}
