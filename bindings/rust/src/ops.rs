//! Submission of each collective through its asynchronous C call: argument checks
//! in Rust terms, the C call, and what must stay alive until hvd_wait (the name,
//! shapes, splits and the slots libhvd writes the outputs' address and sizes into).
//! Both the blocking functions (collectives.rs) and the scoped handles (handle.rs)
//! use these.
//!
//! An argument refused here is announced to the other ranks with hvd_refuse, as
//! libhvd does for the calls it refuses itself: the other ranks' operation fails
//! with HVD_ERR_MISMATCH instead of waiting for this rank for ever.
use crate::buffer::{Buffer, Gathered};
use crate::element::{Element, ReduceOp};
use crate::error::{check, Error, Result, Status};
use crate::ffi;
use crate::options::Options;
use std::ffi::CString;
use std::os::raw::{c_int, c_void};
use std::ptr;

type Finish<'a, R> = Box<dyn FnOnce(Result<()>) -> Result<R> + 'a>;

/// An operation libhvd accepted: its handle, and what turns its completion into
/// the caller's result (and releases what had to stay alive). Dropping an Op
/// without `wait` leaks what it keeps, which is what a forgotten handle needs.
pub(crate) struct Op<'a, R> {
    pub(crate) raw: ffi::hvd_handle_t,
    finish: Finish<'a, R>,
}

impl<'a, R> Op<'a, R> {
    pub(crate) fn wait(self) -> Result<R> {
        // SAFETY: raw came from a successful async call and is waited once.
        let status = unsafe { ffi::hvd_wait(self.raw) };
        (self.finish)(check(status))
    }
}

/// Announces a call this binding refused, and returns the error for this rank.
pub(crate) fn refuse(op: &str, name: &str, ntensors: usize, opts: &Options, reason: String) -> Error {
    let c_op = CString::new(op).expect("operation names hold no NUL");
    let c_name = CString::new(name.split('\0').next().unwrap_or("")).expect("cut at the NUL");
    let c_reason = CString::new(reason.replace('\0', "\\0")).expect("NUL replaced");
    let raw = opts.raw();
    let ntensors = c_int::try_from(ntensors).unwrap_or(c_int::MAX);
    // SAFETY: all pointers are valid NUL-terminated strings or a filled struct.
    let status =
        unsafe { ffi::hvd_refuse(c_op.as_ptr(), c_name.as_ptr(), ntensors, &raw, c_reason.as_ptr()) };
    match check(status) {
        Err(e) if e.kind() == Status::NotInitialized => e,
        _ => Error::invalid(reason),
    }
}

fn c_name(op: &str, name: &str, ntensors: usize, opts: &Options) -> Result<CString> {
    CString::new(name).map_err(|_| {
        refuse(op, name, ntensors, opts, format!("{op}: tensor name {name:?} contains a NUL byte"))
    })
}

fn submit(call: impl FnOnce(*mut ffi::hvd_handle_t) -> ffi::hvd_status_t) -> Result<ffi::hvd_handle_t> {
    let mut handle: ffi::hvd_handle_t = 0;
    check(call(&mut handle))?;
    Ok(handle)
}

/// Whole rows of row_len elements: their number and the shape given to libhvd
/// ([rows] when row_len is 1, else [rows, row_len]).
fn rows_shape(op: &str, name: &str, len: usize, row_len: usize, opts: &Options) -> Result<(usize, Vec<i64>)> {
    if row_len == 0 {
        return Err(refuse(op, name, 1, opts, format!("{op} {name:?}: row_len is 0, it must be at least 1")));
    }
    if len % row_len != 0 {
        return Err(refuse(
            op,
            name,
            1,
            opts,
            format!("{op} {name:?}: {len} elements are not whole rows of {row_len}"),
        ));
    }
    let rows = len / row_len;
    let shape = if row_len == 1 { vec![rows as i64] } else { vec![rows as i64, row_len as i64] };
    Ok((rows, shape))
}

pub(crate) fn allreduce<'a, T: Element>(
    input: &'a [T],
    output: &'a mut [T],
    op: ReduceOp,
    name: &str,
    opts: &Options,
) -> Result<Op<'a, &'a mut [T]>> {
    if input.len() != output.len() {
        let reason =
            format!("allreduce {name:?}: input has {} elements, output {}", input.len(), output.len());
        return Err(refuse("allreduce", name, 1, opts, reason));
    }
    let c = c_name("allreduce", name, 1, opts)?;
    let raw_opts = opts.raw();
    let (send, recv) = (input.as_ptr() as *const c_void, output.as_mut_ptr() as *mut c_void);
    // SAFETY: both buffers hold input.len() elements of T and stay borrowed for 'a,
    // until the Op is waited.
    let raw = submit(|h| unsafe {
        ffi::hvd_allreduce_async(send, recv, input.len() as i64, T::DTYPE, op.raw(), c.as_ptr(), &raw_opts, h)
    })?;
    Ok(Op { raw, finish: Box::new(move |r| r.map(move |()| { drop(c); output })) })
}

pub(crate) fn allreduce_in_place<'a, T: Element>(
    data: &'a mut [T],
    op: ReduceOp,
    name: &str,
    opts: &Options,
) -> Result<Op<'a, &'a mut [T]>> {
    let c = c_name("allreduce", name, 1, opts)?;
    let raw_opts = opts.raw();
    let buf = data.as_mut_ptr() as *mut c_void;
    // SAFETY: sendbuf == recvbuf (in place), data.len() elements borrowed for 'a.
    let raw = submit(|h| unsafe {
        ffi::hvd_allreduce_async(buf, buf, data.len() as i64, T::DTYPE, op.raw(), c.as_ptr(), &raw_opts, h)
    })?;
    Ok(Op { raw, finish: Box::new(move |r| r.map(move |()| { drop(c); data })) })
}

/// root_rank as C takes it, refused here where libhvd would refuse it too.
fn root(op: &str, name: &str, root_rank: usize, opts: &Options) -> Result<c_int> {
    let root = c_int::try_from(root_rank).map_err(|_| {
        refuse(op, name, 1, opts, format!("{op} {name:?}: root_rank {root_rank} is out of range"))
    })?;
    if let Ok(members) = opts.process_set.ranks() {
        if !members.contains(&root_rank) {
            let reason = format!(
                "{op} {name:?}: root_rank {root_rank} is not a member of process set {} (ranks {:?})",
                opts.process_set.id(),
                members
            );
            return Err(refuse(op, name, 1, opts, reason));
        }
    }
    Ok(root)
}

pub(crate) fn broadcast<'a, T: Element>(
    data: &'a mut [T],
    root_rank: usize,
    name: &str,
    opts: &Options,
) -> Result<Op<'a, &'a mut [T]>> {
    let root = root("broadcast", name, root_rank, opts)?;
    let c = c_name("broadcast", name, 1, opts)?;
    let raw_opts = opts.raw();
    let buf = data.as_mut_ptr() as *mut c_void;
    // SAFETY: data.len() elements borrowed for 'a.
    let raw = submit(|h| unsafe {
        ffi::hvd_broadcast_async(buf, data.len() as i64, T::DTYPE, root, c.as_ptr(), &raw_opts, h)
    })?;
    Ok(Op { raw, finish: Box::new(move |r| r.map(move |()| { drop(c); data })) })
}

pub(crate) fn grouped_allreduce<'a, T: Element>(
    inputs: &[&'a [T]],
    mut outputs: Vec<&'a mut [T]>,
    op: ReduceOp,
    name: &str,
    opts: &Options,
) -> Result<Op<'a, Vec<&'a mut [T]>>> {
    let n = inputs.len();
    if outputs.len() != n {
        let reason = format!("grouped_allreduce {name:?}: {n} inputs but {} outputs", outputs.len());
        return Err(refuse("grouped_allreduce", name, n, opts, reason));
    }
    if let Some(i) = (0..n).find(|&i| inputs[i].len() != outputs[i].len()) {
        let reason = format!(
            "grouped_allreduce {name:?}: input {i} has {} elements, output {i} {}",
            inputs[i].len(),
            outputs[i].len()
        );
        return Err(refuse("grouped_allreduce", name, n, opts, reason));
    }
    let ntensors = c_int::try_from(n).map_err(|_| {
        refuse("grouped_allreduce", name, n, opts, format!("grouped_allreduce {name:?}: too many tensors"))
    })?;
    let c = c_name("grouped_allreduce", name, n, opts)?;
    let raw_opts = opts.raw();
    let sends: Vec<*const c_void> = inputs.iter().map(|s| s.as_ptr() as *const c_void).collect();
    let recvs: Vec<*mut c_void> = outputs.iter_mut().map(|s| s.as_mut_ptr() as *mut c_void).collect();
    let counts: Vec<i64> = inputs.iter().map(|s| s.len() as i64).collect();
    // SAFETY: n tensors of counts[i] elements each, borrowed for 'a; the pointer
    // arrays are kept until the Op is waited.
    let raw = submit(|h| unsafe {
        ffi::hvd_grouped_allreduce_async(
            ntensors,
            sends.as_ptr(),
            recvs.as_ptr(),
            counts.as_ptr(),
            T::DTYPE,
            op.raw(),
            c.as_ptr(),
            &raw_opts,
            h,
        )
    })?;
    Ok(Op {
        raw,
        finish: Box::new(move |r| {
            drop((c, sends, recvs, counts));
            r.map(move |()| outputs)
        }),
    })
}

/// Where libhvd writes an output of unknown size: its address, its first
/// dimension and the rows per set rank. Boxed and kept until the wait.
struct Slots {
    data: *mut c_void,
    dim0: i64,
    per_rank: Vec<i64>,
}

impl Slots {
    fn new(set_size: usize) -> *mut Slots {
        Box::into_raw(Box::new(Slots { data: ptr::null_mut(), dim0: 0, per_rank: vec![0; set_size] }))
    }

    fn per_rank_ptr(slots: *mut Slots) -> *mut i64 {
        // SAFETY: slots is a live Box; only the vector's buffer address is read.
        let per_rank = unsafe { &mut (*slots).per_rank };
        if per_rank.is_empty() { ptr::null_mut() } else { per_rank.as_mut_ptr() }
    }

    /// Takes the slots back after completion (or a refused call) and makes the result.
    fn finish<T: Element>(slots: *mut Slots, row_len: usize, r: Result<()>) -> Result<Gathered<T>> {
        // SAFETY: slots came from Box::into_raw and libhvd no longer writes into it.
        let slots = unsafe { Box::from_raw(slots) };
        let data = slots.data as *mut T;
        if let Err(e) = r {
            // SAFETY: NULL or libhvd's allocation, freed once.
            unsafe { ffi::hvd_free(data as *mut c_void) };
            return Err(e);
        }
        let rows = usize::try_from(slots.dim0).unwrap_or(0);
        let len = rows * row_len;
        if data.is_null() && len > 0 {
            return Err(Error { status: ffi::HVD_ERR_INTERNAL, message: "libhvd returned no output".into() });
        }
        // SAFETY: libhvd allocated rows * row_len elements of T at data.
        let data = unsafe { Buffer::from_raw(data, len) };
        let rows_per_rank = slots.per_rank.iter().map(|&r| usize::try_from(r).unwrap_or(0)).collect();
        Ok(Gathered { data, rows, rows_per_rank })
    }

    /// The Op of a call that fills these slots: on a refused call the slots are
    /// taken back at once; otherwise `keep` (what the call reads until its wait) and
    /// the slots live until the wait makes the result.
    fn op<'a, T: Element, K: 'a>(
        slots: *mut Slots,
        row_len: usize,
        raw: Result<ffi::hvd_handle_t>,
        keep: K,
    ) -> Result<Op<'a, Gathered<T>>> {
        let raw = match raw {
            Ok(raw) => raw,
            Err(e) => return Slots::finish::<T>(slots, row_len, Err(e)).map(|_| unreachable!()),
        };
        Ok(Op {
            raw,
            finish: Box::new(move |r| {
                drop(keep);
                Slots::finish(slots, row_len, r)
            }),
        })
    }
}

pub(crate) fn allgather<'a, T: Element>(
    input: &'a [T],
    row_len: usize,
    name: &str,
    opts: &Options,
) -> Result<Op<'a, Gathered<T>>> {
    let (_, shape) = rows_shape("allgather", name, input.len(), row_len, opts)?;
    let c = c_name("allgather", name, 1, opts)?;
    let raw_opts = opts.raw();
    let slots = Slots::new(opts.process_set.size().unwrap_or(0));
    let per_rank = Slots::per_rank_ptr(slots);
    // SAFETY: input borrowed for 'a; slots live until finish; shape read by the call.
    let raw = submit(|h| unsafe {
        ffi::hvd_allgather_async(
            input.as_ptr() as *const c_void,
            shape.len() as c_int,
            shape.as_ptr(),
            T::DTYPE,
            ptr::addr_of_mut!((*slots).data),
            ptr::addr_of_mut!((*slots).dim0),
            per_rank,
            c.as_ptr(),
            &raw_opts,
            h,
        )
    });
    Slots::op(slots, row_len, raw, (c, shape, input))
}

pub(crate) fn alltoall<'a, T: Element>(
    input: &'a [T],
    row_len: usize,
    send_splits: Option<&[usize]>,
    name: &str,
    opts: &Options,
) -> Result<Op<'a, Gathered<T>>> {
    let (rows, shape) = rows_shape("alltoall", name, input.len(), row_len, opts)?;
    let set_size = opts.process_set.size().unwrap_or(0);
    let splits: Option<Vec<i64>> = match send_splits {
        None => None,
        Some(splits) => {
            let total: usize = splits.iter().sum();
            if splits.len() != set_size || total != rows {
                let reason = format!(
                    "alltoall {name:?}: send_splits {splits:?} must have {set_size} entries (the \
                     process set's size) summing to the {rows} rows of the input"
                );
                return Err(refuse("alltoall", name, 1, opts, reason));
            }
            Some(splits.iter().map(|&s| s as i64).collect())
        }
    };
    let c = c_name("alltoall", name, 1, opts)?;
    let raw_opts = opts.raw();
    let slots = Slots::new(set_size);
    let recv_splits = Slots::per_rank_ptr(slots);
    let splits_ptr = splits.as_ref().map_or(ptr::null(), |s| s.as_ptr());
    // SAFETY: as allgather; splits kept until finish.
    let raw = submit(|h| unsafe {
        ffi::hvd_alltoall_async(
            input.as_ptr() as *const c_void,
            shape.len() as c_int,
            shape.as_ptr(),
            T::DTYPE,
            splits_ptr,
            ptr::addr_of_mut!((*slots).data),
            ptr::addr_of_mut!((*slots).dim0),
            recv_splits,
            c.as_ptr(),
            &raw_opts,
            h,
        )
    });
    Slots::op(slots, row_len, raw, (c, shape, splits, input))
}

pub(crate) fn reducescatter<'a, T: Element>(
    input: &'a [T],
    row_len: usize,
    op: ReduceOp,
    name: &str,
    opts: &Options,
) -> Result<Op<'a, Vec<T>>> {
    let (rows, shape) = rows_shape("reducescatter", name, input.len(), row_len, opts)?;
    let set = opts.process_set;
    let my_rows = match (set.rank(), set.size()) {
        // SAFETY: a pure function.
        (Some(r), Some(s)) => unsafe { ffi::hvd_reducescatter_rows(rows as i64, r as c_int, s as c_int) },
        _ => 0,
    };
    let mut output = vec![T::default(); usize::try_from(my_rows).unwrap_or(0) * row_len];
    let c = c_name("reducescatter", name, 1, opts)?;
    let raw_opts = opts.raw();
    let recv = output.as_mut_ptr() as *mut c_void;
    // SAFETY: input borrowed for 'a; output holds this rank's block and is kept
    // (its heap buffer does not move) until finish.
    let raw = submit(|h| unsafe {
        ffi::hvd_reducescatter_async(
            input.as_ptr() as *const c_void,
            recv,
            shape.len() as c_int,
            shape.as_ptr(),
            T::DTYPE,
            op.raw(),
            c.as_ptr(),
            &raw_opts,
            h,
        )
    })?;
    Ok(Op {
        raw,
        finish: Box::new(move |r| {
            drop((c, shape, input));
            r.map(move |()| output)
        }),
    })
}
