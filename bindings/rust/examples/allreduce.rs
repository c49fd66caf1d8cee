//! Allreduce across ranks from Rust: run with `hvdrun -np 2 target/.../allreduce`
//! (or mpiexec -n 2). Every rank checks the results and exits non-zero on a mismatch.
use std::process::ExitCode;

fn run() -> Result<(), Box<dyn std::error::Error>> {
    hvd::init()?;
    let rank = hvd::rank().ok_or("rank unknown after init")?;
    let size = hvd::size().ok_or("size unknown after init")?;

    // Sum of (rank + i) over ranks = size * i + size * (size - 1) / 2.
    let input: Vec<f64> = (0..1000).map(|i| (rank + i) as f64).collect();
    let mut sum = vec![0.0f64; input.len()];
    hvd::allreduce(&input, &mut sum, hvd::ReduceOp::Sum, "rust.sum")?;
    for (i, value) in sum.iter().enumerate() {
        let expected = (size * i + size * (size - 1) / 2) as f64;
        if *value != expected {
            return Err(format!("rank {rank}: sum[{i}] = {value}, expected {expected}").into());
        }
    }

    let mut avg: Vec<f32> = vec![rank as f32; 16];
    hvd::allreduce_in_place(&mut avg, hvd::ReduceOp::Average, "rust.average")?;
    let expected = (size - 1) as f32 / 2.0;
    if avg.iter().any(|v| (v - expected).abs() > 1e-6) {
        return Err(format!("rank {rank}: average {avg:?}, expected {expected}").into());
    }

    let mut seed: Vec<i64> = vec![if rank == 0 { 42 } else { -1 }; 4];
    hvd::broadcast(&mut seed, 0, "rust.seed")?;
    if seed.iter().any(|&v| v != 42) {
        return Err(format!("rank {rank}: broadcast gave {seed:?}").into());
    }

    if rank == 0 {
        println!("libhvd {} from Rust: allreduce and broadcast OK on {size} ranks", hvd::version());
    }
    hvd::shutdown()?;
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("allreduce example failed: {e}");
            ExitCode::FAILURE
        }
    }
}
