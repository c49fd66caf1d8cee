//! Blocking collectives (each is its asynchronous call followed by hvd_wait), and
//! barrier and join. Names identify an operation across ranks; every rank of the
//! process set must agree on its operation, dtype, sizes, root and reduce op, or
//! every rank gets `Status::Mismatch`.
use crate::buffer::Gathered;
use crate::element::{Element, ReduceOp};
use crate::error::{check, Result};
use crate::ffi;
use crate::ops;
use crate::options::Options;
use crate::process_set::ProcessSet;

/// Reduces `input` over the ranks into `output` (same length).
pub fn allreduce<T: Element>(input: &[T], output: &mut [T], op: ReduceOp, name: &str) -> Result<()> {
    allreduce_with(input, output, op, name, &Options::default())
}

/// `allreduce` with options (process set, scale factors).
pub fn allreduce_with<T: Element>(
    input: &[T],
    output: &mut [T],
    op: ReduceOp,
    name: &str,
    opts: &Options,
) -> Result<()> {
    ops::allreduce(input, output, op, name, opts)?.wait().map(|_| ())
}

/// Reduces `data` in place over the ranks under `name`.
pub fn allreduce_in_place<T: Element>(data: &mut [T], op: ReduceOp, name: &str) -> Result<()> {
    allreduce_in_place_with(data, op, name, &Options::default())
}

pub fn allreduce_in_place_with<T: Element>(
    data: &mut [T],
    op: ReduceOp,
    name: &str,
    opts: &Options,
) -> Result<()> {
    ops::allreduce_in_place(data, op, name, opts)?.wait().map(|_| ())
}

/// Overwrites `data` with root_rank's copy (root_rank is a global rank).
pub fn broadcast<T: Element>(data: &mut [T], root_rank: usize, name: &str) -> Result<()> {
    broadcast_with(data, root_rank, name, &Options::default())
}

/// `broadcast` within a process set: root_rank is still a global rank, and must
/// be a member of the set.
pub fn broadcast_with<T: Element>(data: &mut [T], root_rank: usize, name: &str, opts: &Options) -> Result<()> {
    ops::broadcast(data, root_rank, name, opts)?.wait().map(|_| ())
}

/// Reduces tensor i of `inputs` into `outputs[i]`, all fused as one unit;
/// members are named `"<name>.<i>"`.
pub fn grouped_allreduce<T: Element>(
    inputs: &[&[T]],
    outputs: &mut [&mut [T]],
    op: ReduceOp,
    name: &str,
    opts: &Options,
) -> Result<()> {
    let outputs: Vec<&mut [T]> = outputs.iter_mut().map(|o| &mut **o).collect();
    ops::grouped_allreduce(inputs, outputs, op, name, opts)?.wait().map(|_| ())
}

/// Concatenates every rank's rows of `row_len` elements, in set rank order. The
/// number of rows may differ per rank.
pub fn allgather<T: Element>(input: &[T], row_len: usize, name: &str, opts: &Options) -> Result<Gathered<T>> {
    ops::allgather(input, row_len, name, opts)?.wait()
}

/// Sends `send_splits[r]` rows of `row_len` elements to set rank r (None: the rows
/// split evenly); returns the rows received, in set rank order.
pub fn alltoall<T: Element>(
    input: &[T],
    row_len: usize,
    send_splits: Option<&[usize]>,
    name: &str,
    opts: &Options,
) -> Result<Gathered<T>> {
    ops::alltoall(input, row_len, send_splits, name, opts)?.wait()
}

/// Reduces the rows (any op but Adasum) and returns this rank's block: the first
/// rows % size set ranks get one row more than the others.
pub fn reducescatter<T: Element>(
    input: &[T],
    row_len: usize,
    op: ReduceOp,
    name: &str,
    opts: &Options,
) -> Result<Vec<T>> {
    ops::reducescatter(input, row_len, op, name, opts)?.wait()
}

/// Returns when every rank has called it (the global set; see
/// `ProcessSet::barrier`).
pub fn barrier() -> Result<()> {
    ProcessSet::GLOBAL.barrier()
}

/// Declares that this rank has no more data (Horovod's join): until every rank
/// has joined, it contributes zeros to the others' allreduces. Returns the last
/// rank to join, the same on every rank.
pub fn join() -> Result<usize> {
    let mut last = -1;
    // SAFETY: last is a valid out-pointer.
    check(unsafe { ffi::hvd_join(ffi::HVD_DEVICE_CPU, &mut last) })?;
    Ok(last.max(0) as usize)
}

/// Rows that set rank `set_rank` receives from a reducescatter of `rows` rows over
/// `set_size` ranks; None for invalid arguments.
pub fn reducescatter_rows(rows: usize, set_rank: usize, set_size: usize) -> Option<usize> {
    let (r, s) = (i32::try_from(set_rank).ok()?, i32::try_from(set_size).ok()?);
    // SAFETY: a pure function.
    usize::try_from(unsafe { ffi::hvd_reducescatter_rows(rows as i64, r, s) }).ok()
}
