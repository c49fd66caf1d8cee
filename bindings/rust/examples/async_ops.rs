//! Asynchronous collectives in a scope: an allreduce polled until done then
//! waited, several operations in flight waited in reverse order, a handle dropped
//! without wait and one leaked with mem::forget (their buffers are checked once
//! the borrow checker hands them back), and async broadcast, grouped allreduce,
//! allgather, alltoall and reducescatter. Exits non-zero on any wrong value.
#[macro_use]
mod common;

use hvd::{Options, ReduceOp};

fn run() -> Result<String, Box<dyn std::error::Error>> {
    hvd::init()?;
    let rank = hvd::rank().ok_or("rank unknown after init")?;
    let n = hvd::size().ok_or("size unknown after init")?;
    let tri = n * (n + 1) / 2;
    let opts = Options::new();

    // Buffers outlive the scope: handles borrow them for its whole lifetime.
    let input: Vec<f32> = (0..1000).map(|i| (rank + i) as f32).collect();
    let mut polled = vec![0.0f32; 1000];
    let mut many: Vec<Vec<i64>> = (0..4).map(|k| vec![(rank + k) as i64; 64]).collect();
    let mut dropped = vec![(rank + 1) as i32; 16];
    let mut forgotten = vec![(rank + 1) as f64; 16];
    let mut bcast = vec![rank as u8; 10];
    let group_in: Vec<Vec<f64>> = vec![vec![rank as f64; 3], vec![1.0; 5]];
    let mut group_out: Vec<Vec<f64>> = vec![vec![0.0; 3], vec![0.0; 5]];
    let rows: Vec<i32> = (0..rank + 1).map(|i| (rank * 10 + i) as i32).collect();
    let to_all: Vec<i64> = (0..n).map(|d| (rank * 10 + d) as i64).collect();
    let scatter: Vec<i64> = (0..n as i64 * 2).map(|i| i * (rank as i64 + 1)).collect();

    let mut polls = 0u64;
    hvd::scope(|s| -> Result<(), Box<dyn std::error::Error>> {
        // Poll until done, then wait: the output borrow comes back from wait.
        let h = s.allreduce(&input, &mut polled, ReduceOp::Sum, "a.polled", &opts)?;
        while !h.poll()? {
            polls += 1;
            std::thread::yield_now();
        }
        let out = h.wait()?;
        let base = (n * (n - 1) / 2) as f32;
        ensure!(
            out.iter().enumerate().all(|(i, &v)| v == base + (n * i) as f32),
            "polled allreduce {:?}",
            &out[..3]
        );

        // Several in flight, waited in reverse order.
        let mut handles = Vec::new();
        for (k, buf) in many.iter_mut().enumerate() {
            handles.push(s.allreduce_in_place(buf, ReduceOp::Sum, &format!("a.many.{k}"), &opts)?);
        }
        for (k, h) in handles.into_iter().enumerate().rev() {
            let out = h.wait()?;
            let expected = (n * (n - 1) / 2 + n * k) as i64;
            ensure!(out.iter().all(|&v| v == expected), "in-flight allreduce {k}: {:?}", &out[..2]);
        }

        // Dropped without wait: Drop waits. Leaked: the scope waits at its end.
        let h = s.allreduce_in_place(&mut dropped, ReduceOp::Sum, "a.dropped", &opts)?;
        drop(h);
        let h = s.allreduce_in_place(&mut forgotten, ReduceOp::Max, "a.forgotten", &opts)?;
        std::mem::forget(h);

        let b = s.broadcast(&mut bcast, 0, "a.broadcast", &opts)?;
        let ins: Vec<&[f64]> = group_in.iter().map(|v| v.as_slice()).collect();
        let outs: Vec<&mut [f64]> = group_out.iter_mut().map(|v| v.as_mut_slice()).collect();
        let g = s.grouped_allreduce(&ins, outs, ReduceOp::Average, "a.grouped", &opts)?;
        let ag = s.allgather(&rows, 1, "a.allgather", &opts)?;
        let a2a = s.alltoall(&to_all, 1, None, "a.alltoall", &opts)?;
        let rs = s.reducescatter(&scatter, 2, ReduceOp::Sum, "a.reducescatter", &opts)?;

        let got = rs.wait()?;
        let expected: Vec<i64> = (rank as i64 * 2..rank as i64 * 2 + 2).map(|i| i * tri as i64).collect();
        ensure!(got == expected, "async reducescatter {got:?}, expected {expected:?}");
        let got = a2a.wait()?;
        let expected: Vec<i64> = (0..n).map(|s| (s * 10 + rank) as i64).collect();
        ensure!(&got.data[..] == &expected[..], "async alltoall {:?}", &got.data[..]);
        let got = ag.wait()?;
        let expected: Vec<i32> = (0..n).flat_map(|r| (0..r + 1).map(move |i| (r * 10 + i) as i32)).collect();
        ensure!(&got.data[..] == &expected[..], "async allgather {:?}", &got.data[..]);
        let outs = g.wait()?;
        ensure!(outs[0] == [(n - 1) as f64 / 2.0; 3] && outs[1] == [1.0; 5], "async grouped {outs:?}");
        let out = b.wait()?;
        ensure!(out == [0u8; 10], "async broadcast {out:?}");
        Ok(())
    })?;

    // The dropped and the leaked handles' buffers, readable again after the scope.
    ensure!(dropped == vec![tri as i32; 16], "dropped handle's allreduce {dropped:?}");
    ensure!(forgotten == vec![n as f64; 16], "leaked handle's allreduce {forgotten:?}");
    Ok(format!("async operations exact on {n} ranks (polled {polls} times before done)"))
}

fn main() -> std::process::ExitCode {
    common::main("async_ops", run)
}
