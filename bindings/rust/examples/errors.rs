//! Error paths: a call before init, ranks that disagree (count, dtype) get
//! Status::Mismatch on every rank, arguments refused by the crate (lengths, a NUL
//! in a name, a root outside the set, bad rows or splits) give InvalidArgument with
//! a message in Rust terms on the refusing rank and Mismatch on the others, a
//! duplicate name in flight, an unknown process set; then the runtime still works.
//! Exits non-zero on any unexpected outcome.
#[macro_use]
mod common;

use hvd::{Error, Options, ProcessSet, ReduceOp, Status};

fn expect_err<T>(what: &str, r: Result<T, Error>, kind: Status, text: &str) -> Result<Error, Box<dyn std::error::Error>> {
    let err = match r {
        Ok(_) => return Err(format!("rank {}: {what} succeeded", hvd::rank().unwrap_or(0)).into()),
        Err(e) => e,
    };
    ensure!(err.kind() == kind && err.message.contains(text), "{what}: got {err}, expected {kind:?} with {text:?}");
    Ok(err)
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let mut out = vec![0i32; 4];
    expect_err("allreduce before init", hvd::allreduce(&[1, 2, 3, 4], &mut out, ReduceOp::Sum, "e.early"),
        Status::NotInitialized, "")?;
    ensure!(hvd::rank().is_none() && hvd::size().is_none(), "rank known before init");

    hvd::init()?;
    let rank = hvd::rank().ok_or("rank unknown after init")?;
    let n = hvd::size().ok_or("size unknown after init")?;
    let opts = Options::new();
    let multi = n > 1;

    // Ranks that disagree on the count: Mismatch on every rank, naming the tensor.
    if multi {
        let len = if rank == 0 { 4 } else { 5 };
        let mut data = vec![1.0f32; len];
        expect_err("count mismatch", hvd::allreduce_in_place(&mut data, ReduceOp::Sum, "e.count"),
            Status::Mismatch, "e.count")?;
        // ... and on the dtype.
        let r = if rank == 0 {
            hvd::allreduce_in_place(&mut [1.0f32; 3], ReduceOp::Sum, "e.dtype")
        } else {
            hvd::allreduce_in_place(&mut [1.0f64; 3], ReduceOp::Sum, "e.dtype")
        };
        expect_err("dtype mismatch", r, Status::Mismatch, "e.dtype")?;

        // Refused by the crate on rank 0 alone: the others' call fails, not hangs.
        let input = [1i64; 4];
        let r = if rank == 0 {
            let mut short = [0i64; 3];
            hvd::allreduce(&input, &mut short, ReduceOp::Sum, "e.refused")
        } else {
            let mut ok = [0i64; 4];
            hvd::allreduce(&input, &mut ok, ReduceOp::Sum, "e.refused")
        };
        if rank == 0 {
            expect_err("length mismatch", r, Status::InvalidArgument, "input has 4 elements, output 3")?;
        } else {
            expect_err("peer of a refused call", r, Status::Mismatch, "input has 4 elements, output 3")?;
        }
    }

    // Refused on every rank, with messages in Rust terms.
    let mut buf = [0u8; 4];
    expect_err("NUL in a name", hvd::allreduce_in_place(&mut buf, ReduceOp::Sum, "e.nul\0name"),
        Status::InvalidArgument, "contains a NUL byte")?;
    expect_err("root out of range", hvd::broadcast(&mut buf, n, "e.root"),
        Status::InvalidArgument, &format!("root_rank {n} is not a member of process set 0"))?;
    expect_err("row_len 0", hvd::allgather(&buf, 0, "e.rows", &opts), Status::InvalidArgument, "row_len is 0")?;
    expect_err("partial rows", hvd::allgather(&[1u8; 5], 2, "e.partial", &opts),
        Status::InvalidArgument, "5 elements are not whole rows of 2")?;
    let bad_splits = vec![1usize; n + 1];
    expect_err("bad splits", hvd::alltoall(&[1u8; 3], 1, Some(&bad_splits), "e.splits", &opts),
        Status::InvalidArgument, "send_splits")?;
    let unknown = Options::new().process_set(ProcessSet::from_id(999));
    let err = expect_err("unknown process set", hvd::allreduce_with(&[1.0f64], &mut [0.0], ReduceOp::Sum, "e.set", &unknown),
        Status::InvalidArgument, "")?;
    ensure!(!err.message.is_empty(), "no message for an unknown process set");
    ensure!(err.to_string().contains("InvalidArgument"), "Display: {err}");

    // A name already in flight on this rank.
    let a = [1i32; 8];
    let (mut first, mut second) = ([0i32; 8], [0i32; 8]);
    hvd::scope(|s| -> Result<(), Box<dyn std::error::Error>> {
        let h = s.allreduce(&a, &mut first, ReduceOp::Sum, "e.dup", &opts)?;
        expect_err("duplicate name", s.allreduce(&a, &mut second, ReduceOp::Sum, "e.dup", &opts),
            Status::DuplicateName, "")?;
        let out = h.wait()?;
        ensure!(out == [n as i32; 8], "first of the duplicates {out:?}");
        Ok(())
    })?;

    // The runtime goes on, and the names used above work when the ranks agree.
    for name in ["e.count", "e.refused", "e.root", "e.after"] {
        let mut data = vec![(rank + 1) as i64; 7];
        hvd::allreduce_in_place(&mut data, ReduceOp::Sum, name)?;
        ensure!(data == vec![(n * (n + 1) / 2) as i64; 7], "{name} after the errors: {data:?}");
    }
    let mut b = [rank as u8; 3];
    hvd::broadcast(&mut b, n - 1, "e.root")?;
    ensure!(b == [(n - 1) as u8; 3], "broadcast after the errors {b:?}");
    Ok(format!("every error path reported as expected on {n} ranks"))
}

fn main() -> std::process::ExitCode {
    common::main("errors", run)
}
