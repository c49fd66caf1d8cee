//! Blocking collectives from Rust, each result checked exactly on every rank:
//! allreduce of every element type and reduce op, scale factors, broadcast,
//! grouped allreduce, allgather of uneven rows, alltoall with and without splits,
//! reducescatter of uneven blocks, barrier. Run under mpiexec with any number of
//! ranks; exits non-zero on the first wrong value.
#[macro_use]
mod common;

use hvd::{Bf16, Element, Options, ReduceOp, F16};
use std::fmt::Debug;

fn sum_of<T: Element + PartialEq + Debug>(value: impl Fn(usize) -> T, expected: T, name: &str) -> common::Outcome {
    let rank = hvd::rank().unwrap();
    let input = vec![value(rank); 33];
    let mut output = vec![T::default(); 33];
    hvd::allreduce(&input, &mut output, ReduceOp::Sum, name)?;
    ensure!(output.iter().all(|v| *v == expected), "{name}: {:?}, expected {:?}", &output[..3], expected);
    Ok(())
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    hvd::init()?;
    let rank = hvd::rank().ok_or("rank unknown after init")?;
    let n = hvd::size().ok_or("size unknown after init")?;
    let tri = n * (n + 1) / 2; // sum of rank + 1 over the ranks
    let opts = Options::new();

    // Every element type: sum of rank + 1.
    sum_of(|r| (r + 1) as u8, tri as u8, "c.u8")?;
    sum_of(|r| -((r + 1) as i8), -(tri as i8), "c.i8")?;
    sum_of(|r| (r + 1) as u16 * 1000, tri as u16 * 1000, "c.u16")?;
    sum_of(|r| -((r + 1) as i16), -(tri as i16), "c.i16")?;
    sum_of(|r| (r + 1) as i32, tri as i32, "c.i32")?;
    sum_of(|r| (r as i64 + 1) << 40, (tri as i64) << 40, "c.i64")?;
    sum_of(|r| (r + 1) as f32 * 0.5, tri as f32 * 0.5, "c.f32")?;
    sum_of(|r| (r + 1) as f64 * 0.25, tri as f64 * 0.25, "c.f64")?;
    sum_of(|r| F16::from_f32((r + 1) as f32 * 1.5), F16::from_f32(tri as f32 * 1.5), "c.f16")?;
    sum_of(|r| Bf16::from_f32((r + 1) as f32 * 2.0), Bf16::from_f32(tri as f32 * 2.0), "c.bf16")?;
    ensure!(F16::from_f32(1.5).to_f32() == 1.5 && F16::from_f32(65504.0).0 == 0x7bff, "F16 conversion");
    ensure!(F16::from_f32(1e6).to_f32().is_infinite() && Bf16::from_f32(-3.0).to_f32() == -3.0, "conversion");

    // Every reduce op.
    let mut v = vec![(rank + 1) as i64; 5];
    hvd::allreduce_in_place(&mut v, ReduceOp::Min, "c.min")?;
    ensure!(v == vec![1; 5], "min {v:?}");
    let mut v = vec![(rank + 1) as i64; 5];
    hvd::allreduce_in_place(&mut v, ReduceOp::Max, "c.max")?;
    ensure!(v == vec![n as i64; 5], "max {v:?}");
    let mut v = vec![(rank + 1) as i64; 5];
    hvd::allreduce_in_place(&mut v, ReduceOp::Product, "c.product")?;
    let factorial: i64 = (1..=n as i64).product();
    ensure!(v == vec![factorial; 5], "product {v:?}, expected {factorial}");
    let mut v = vec![2 * rank as i32; 5];
    hvd::allreduce_in_place(&mut v, ReduceOp::Average, "c.average.i32")?;
    ensure!(v == vec![(n - 1) as i32; 5], "integer average {v:?}");
    let input = vec![rank as f64; 8];
    let mut out = vec![0.0; 8];
    hvd::allreduce_with(&input, &mut out, ReduceOp::Average, "c.average.f64", &opts)?;
    ensure!(out == vec![(n - 1) as f64 / 2.0; 8], "average {out:?}");
    // Scale factors: (2 x) summed, then halved, is the plain sum.
    let input = vec![(rank + 1) as f64; 8];
    hvd::allreduce_with(&input, &mut out, ReduceOp::Sum, "c.scaled", &opts.prescale(2.0).postscale(0.5))?;
    ensure!(out == vec![tri as f64; 8], "scaled sum {out:?}");

    // Broadcast from the last rank.
    let mut b: Vec<u16> = (0..100).map(|i| (rank * 1000 + i) as u16).collect();
    hvd::broadcast_with(&mut b, n - 1, "c.broadcast", &opts)?;
    ensure!(b.iter().enumerate().all(|(i, &x)| x as usize == (n - 1) * 1000 + i), "broadcast {:?}", &b[..3]);

    // Grouped allreduce of three tensors of different lengths.
    let lens = [1usize, 100, 7];
    let inputs: Vec<Vec<i64>> = lens
        .iter()
        .enumerate()
        .map(|(t, &len)| (0..len).map(|i| (rank * 1000 + t * 100 + i) as i64).collect())
        .collect();
    let mut outputs: Vec<Vec<i64>> = lens.iter().map(|&len| vec![0; len]).collect();
    {
        let ins: Vec<&[i64]> = inputs.iter().map(|v| v.as_slice()).collect();
        let mut outs: Vec<&mut [i64]> = outputs.iter_mut().map(|v| v.as_mut_slice()).collect();
        hvd::grouped_allreduce(&ins, &mut outs, ReduceOp::Sum, "c.grouped", &opts)?;
    }
    for (t, out) in outputs.iter().enumerate() {
        for (i, &x) in out.iter().enumerate() {
            let expected = (1000 * n * (n - 1) / 2 + n * (t * 100 + i)) as i64;
            ensure!(x == expected, "grouped tensor {t}[{i}] = {x}, expected {expected}");
        }
    }

    // Allgather: rank r gives r + 1 rows of 3.
    let row_len = 3;
    let mine: Vec<i32> = (0..(rank + 1) * row_len).map(|i| (rank * 100 + i) as i32).collect();
    let g = hvd::allgather(&mine, row_len, "c.allgather", &opts)?;
    ensure!(g.rows == tri && g.data.len() == tri * row_len, "allgather rows {} len {}", g.rows, g.data.len());
    ensure!(g.rows_per_rank == (1..=n).collect::<Vec<_>>(), "allgather rows per rank {:?}", g.rows_per_rank);
    let expected: Vec<i32> = (0..n)
        .flat_map(|r| (0..(r + 1) * row_len).map(move |i| (r * 100 + i) as i32))
        .collect();
    ensure!(&g.data[..] == &expected[..], "allgather data {:?}, expected {:?}", &g.data[..], expected);

    // Alltoall with splits: rank r sends (r + d) % 2 + 1 rows of 2 to rank d.
    let splits: Vec<usize> = (0..n).map(|d| (rank + d) % 2 + 1).collect();
    let mut send = Vec::new();
    for (d, &rows) in splits.iter().enumerate() {
        for k in 0..rows {
            let v = (rank * 10000 + d * 100 + k) as f64;
            send.extend_from_slice(&[v, -v]);
        }
    }
    let got = hvd::alltoall(&send, 2, Some(&splits), "c.alltoall", &opts)?;
    let from: Vec<usize> = (0..n).map(|s| (s + rank) % 2 + 1).collect();
    ensure!(got.rows_per_rank == from, "alltoall received splits {:?}, expected {from:?}", got.rows_per_rank);
    let mut expected = Vec::new();
    for (s, &rows) in from.iter().enumerate() {
        for k in 0..rows {
            let v = (s * 10000 + rank * 100 + k) as f64;
            expected.extend_from_slice(&[v, -v]);
        }
    }
    ensure!(&got.data[..] == &expected[..], "alltoall data {:?}, expected {expected:?}", &got.data[..]);
    // Even split: one row to each rank.
    let send: Vec<i16> = (0..n).map(|d| (rank * 10 + d) as i16).collect();
    let got = hvd::alltoall(&send, 1, None, "c.alltoall.even", &opts)?;
    let expected: Vec<i16> = (0..n).map(|s| (s * 10 + rank) as i16).collect();
    ensure!(&got.data[..] == &expected[..], "even alltoall {:?}, expected {expected:?}", &got.data[..]);

    // Reducescatter of 2n + 1 rows of 2: the first rank gets 3 rows, the others 2.
    let rows = 2 * n + 1;
    let input: Vec<f32> = (0..rows * 2).map(|i| ((rank + 1) * i) as f32).collect();
    let block = hvd::reducescatter(&input, 2, ReduceOp::Sum, "c.reducescatter", &opts)?;
    let first: usize = (0..rank).map(|r| hvd::reducescatter_rows(rows, r, n).unwrap()).sum();
    let mine = hvd::reducescatter_rows(rows, rank, n).unwrap();
    ensure!(mine == if rank == 0 { 3 } else { 2 } || n == 1, "reducescatter_rows {mine}");
    let expected: Vec<f32> = (first * 2..(first + mine) * 2).map(|i| (tri * i) as f32).collect();
    ensure!(block == expected, "reducescatter block {block:?}, expected {expected:?}");

    hvd::barrier()?;
    Ok(format!("every element type, reduce op and collective gave exact results on {n} ranks"))
}

fn main() -> std::process::ExitCode {
    common::main("collectives", run)
}
