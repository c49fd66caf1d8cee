//! Join, traffic counters, step accounting and the timeline: rank 0 joins at once
//! while the others allreduce (rank 0 contributes zeros), every rank gets the same
//! last joined rank; counters grow by the traffic of an allreduce; marked steps are
//! counted; rank 0's timeline names the tensors. Exits non-zero on any wrong value.
#[macro_use]
mod common;

use hvd::ReduceOp;

fn run() -> Result<String, Box<dyn std::error::Error>> {
    hvd::init()?;
    let rank = hvd::rank().ok_or("rank unknown after init")?;
    let n = hvd::size().ok_or("size unknown after init")?;
    ensure!(hvd::local_size().is_some() && hvd::cross_size().is_some(), "local/cross size unknown");
    ensure!(hvd::local_rank() < hvd::local_size() && hvd::cross_rank() < hvd::cross_size(), "local/cross rank");
    ensure!(hvd::local_size().unwrap() * hvd::cross_size().unwrap() == n, "local x cross != size");
    ensure!(hvd::is_homogeneous() == Some(true), "one machine is homogeneous");
    ensure!(hvd::build_info().mpi && hvd::version_number() > 0, "build info {:?}", hvd::build_info());
    ensure!(!hvd::param("HOROVOD_FUSION_THRESHOLD")?.is_empty(), "param");

    // Timeline: recorded by rank 0.
    let timeline = std::env::temp_dir().join(format!("hvd-rust-timeline-{}.json", std::process::id()));
    hvd::start_timeline(&timeline, false)?;

    // Counters grow with the traffic of a 256 KiB allreduce.
    let before = hvd::counters()?;
    let mut big = vec![1.0f32; 1 << 16];
    hvd::allreduce_in_place(&mut big, ReduceOp::Sum, "j.big")?;
    ensure!(big.iter().all(|&v| v == n as f32), "big allreduce");
    let after = hvd::counters()?;
    let ops = |c: &hvd::Counters| c.collectives + c.speculative;
    let bytes = |c: &hvd::Counters| c.global_bytes + c.local_bytes + c.cross_bytes;
    ensure!(ops(&after) > ops(&before), "collectives did not grow: {before:?} -> {after:?}");
    ensure!(after.negotiation_rounds > before.negotiation_rounds, "negotiation rounds did not grow");
    if n > 1 {
        ensure!(bytes(&after) >= bytes(&before) + (1 << 18) / n as u64, "bytes sent: {before:?} -> {after:?}");
    }

    // Marked steps: five marks around four steps.
    for step in 0..5 {
        hvd::mark_step()?;
        if step < 4 {
            let mut g = vec![step as f64; 100];
            hvd::allreduce_in_place(&mut g, ReduceOp::Sum, "j.step.grad")?;
        }
    }
    let stats = hvd::step_stats()?;
    ensure!(stats.enabled, "step accounting is off");
    ensure!(stats.steps >= 1 && stats.steps <= 4, "steps measured {} (warm-up {})", stats.steps, stats.warmup_steps);
    ensure!(stats.step_seconds > 0.0, "step time {}", stats.step_seconds);
    let top = hvd::step_top_tensors(8)?;
    ensure!(top.len() <= 8 && top.iter().all(|t| !t.name.is_empty()), "top tensors {top:?}");

    hvd::stop_timeline()?;
    if rank == 0 {
        let trace = std::fs::read_to_string(&timeline)?;
        let _ = std::fs::remove_file(&timeline);
        ensure!(trace.contains("j.big") && trace.contains("j.step.grad"), "timeline lacks the tensors");
    }

    // Join: rank 0 has no data; the others' allreduce gets zeros from it.
    let last = if rank == 0 {
        hvd::join()?
    } else {
        let mut g = vec![(rank + 1) as i64; 10];
        hvd::allreduce_in_place(&mut g, ReduceOp::Sum, "j.joined.grad")?;
        let expected = (n * (n + 1) / 2 - 1) as i64;
        ensure!(g == vec![expected; 10], "allreduce with rank 0 joined {g:?}, expected {expected}");
        hvd::join()?
    };
    ensure!(last < n && (n == 1 || last != 0), "last joined rank {last}");
    let mut agree = vec![last as i64, -(last as i64)];
    hvd::allreduce_in_place(&mut agree, ReduceOp::Max, "j.last")?;
    ensure!(agree == vec![last as i64, -(last as i64)], "ranks disagree on the last joined rank");
    Ok(format!("join (last joined rank {last}), counters, {} steps, timeline exact on {n} ranks", stats.steps))
}

fn main() -> std::process::ExitCode {
    common::main("join_counters", run)
}
