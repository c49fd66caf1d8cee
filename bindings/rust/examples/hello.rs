//! The README's example: an average over every rank, checked on every rank.
fn main() -> Result<(), hvd::Error> {
    hvd::init()?;
    let rank = hvd::rank().expect("rank is known after init");
    let size = hvd::size().expect("size is known after init");

    // Each rank contributes its rank; the average is (size - 1) / 2 everywhere.
    let mut values = vec![rank as f32; 4];
    hvd::allreduce_in_place(&mut values, hvd::ReduceOp::Average, "hello.average")?;
    assert!(values.iter().all(|&v| v == (size - 1) as f32 / 2.0), "{values:?}");

    if rank == 0 {
        println!("libhvd {}: average over {size} ranks = {}", hvd::version(), values[0]);
    }
    hvd::shutdown()
}
