//! Process sets: a static set of the even ranks made at a second init, a dynamic set of
//! ranks 1..size, their queries (rank, size, membership, members, ids), allreduce,
//! broadcast and barrier within them, a root outside the set refused, and removal.
//! Exits non-zero on any wrong value.
#[macro_use]
mod common;

use hvd::{Options, ProcessSet, ReduceOp, Status};

fn run() -> Result<String, Box<dyn std::error::Error>> {
    // The world size is known after init: initialize once to read it, shut down,
    // and initialize again with the static set (init may be called again).
    hvd::init()?;
    let world = hvd::size().ok_or("size unknown after init")?;
    hvd::shutdown()?;
    ensure!(!hvd::is_initialized() && hvd::rank().is_none(), "still initialized after shutdown");
    let even: Vec<usize> = (0..world).step_by(2).collect();
    let sets = hvd::init_with_process_sets(&[&even])?;
    let rank = hvd::rank().ok_or("rank unknown after init")?;
    let n = hvd::size().ok_or("size unknown after init")?;
    ensure!(n == world, "size {n} after the second init, {world} before");
    ensure!(sets == vec![ProcessSet::from_id(1)], "static sets {sets:?}");
    let evens = sets[0];
    ensure!(evens.size() == Some(even.len()) && evens.ranks()? == even, "static set {:?}", evens.ranks()?);
    ensure!(evens.included() == Some(rank % 2 == 0), "static membership {:?}", evens.included());
    ensure!(hvd::process_sets()? == vec![ProcessSet::GLOBAL, evens], "ids {:?}", hvd::process_sets()?);
    ensure!(ProcessSet::GLOBAL.size() == Some(n) && ProcessSet::GLOBAL.rank() == Some(rank), "global set");

    if rank % 2 == 0 {
        let mut one = vec![1i32; 4];
        hvd::allreduce_in_place_with(&mut one, ReduceOp::Sum, "p.evens", &Options::new().process_set(evens))?;
        ensure!(one == vec![even.len() as i32; 4], "allreduce over the even ranks {one:?}");
    }

    // A dynamic set of every rank but 0.
    let members: Vec<usize> = (1..n).collect();
    if members.is_empty() {
        return Ok("one rank: static set checked, no subset to make".into());
    }
    let sub = ProcessSet::add(&members)?;
    ensure!(sub.id() > evens.id(), "new set id {}", sub.id());
    ensure!(sub.ranks()? == members && sub.size() == Some(n - 1), "subset members {:?}", sub.ranks()?);
    ensure!(sub.included() == Some(rank >= 1), "subset membership {:?}", sub.included());
    ensure!(sub.rank() == rank.checked_sub(1), "rank in subset {:?}", sub.rank());
    ensure!(hvd::process_sets()? == vec![ProcessSet::GLOBAL, evens, sub], "ids {:?}", hvd::process_sets()?);
    let in_sub = Options::new().process_set(sub);
    if rank >= 1 {
        let input = vec![rank as i64; 6];
        let mut out = vec![0i64; 6];
        hvd::allreduce_with(&input, &mut out, ReduceOp::Sum, "p.sub.sum", &in_sub)?;
        ensure!(out == vec![(n * (n - 1) / 2) as i64; 6], "allreduce over the subset {out:?}");
        // root_rank is a global rank: 1 is the subset's first member.
        let mut b = vec![rank as f32 * 3.0; 5];
        hvd::broadcast_with(&mut b, 1, "p.sub.broadcast", &in_sub)?;
        ensure!(b == vec![3.0f32; 5], "broadcast in the subset {b:?}");
        // Rank 0 is no member: refused with the set's members named.
        let err = hvd::broadcast_with(&mut b, 0, "p.sub.bad_root", &in_sub).err().ok_or("root 0 accepted")?;
        ensure!(err.kind() == Status::InvalidArgument && err.message.contains("not a member"), "bad root: {err}");
        let g = hvd::allgather(&[rank as u8], 1, "p.sub.allgather", &in_sub)?;
        ensure!(&g.data[..] == &members.iter().map(|&r| r as u8).collect::<Vec<_>>()[..], "subset allgather");
        sub.barrier()?;
    }
    hvd::barrier()?;
    sub.remove()?;
    ensure!(sub.size().is_none() && sub.included().is_none(), "removed set still known");
    ensure!(hvd::process_sets()? == vec![ProcessSet::GLOBAL, evens], "ids after removal {:?}", hvd::process_sets()?);
    Ok(format!("static and dynamic process sets exact on {n} ranks"))
}

fn main() -> std::process::ExitCode {
    common::main("process_sets", run)
}
