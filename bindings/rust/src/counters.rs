//! Traffic counters and step accounting (hvd_get_counters, hvd_get_step_stats,
//! hvd_get_step_top_tensors, hvd_mark_step).
use crate::error::{check, text, Error, Result};
use crate::ffi;
use std::mem::{size_of, MaybeUninit};
use std::os::raw::c_int;

/// Bytes this rank has sent through collectives since init, and related counts
/// (hvd_counters_t; see hvd.h for each field).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub global_bytes: u64,
    pub local_bytes: u64,
    pub cross_bytes: u64,
    pub collectives: u64,
    pub negotiation_rounds: u64,
    pub speculative: u64,
    pub ring_allreduces: u64,
    pub core_round_trip_ns: u64,
    pub far_cores: u64,
    pub back_to_back: u64,
}

pub fn counters() -> Result<Counters> {
    let mut raw = ffi::hvd_counters_t { struct_size: size_of::<ffi::hvd_counters_t>(), ..Default::default() };
    // SAFETY: raw is a valid hvd_counters_t with its struct_size set.
    check(unsafe { ffi::hvd_get_counters(&mut raw) })?;
    Ok(Counters {
        global_bytes: raw.global_bytes,
        local_bytes: raw.local_bytes,
        cross_bytes: raw.cross_bytes,
        collectives: raw.collectives,
        negotiation_rounds: raw.negotiation_rounds,
        speculative: raw.speculative,
        ring_allreduces: raw.ring_allreduces,
        core_round_trip_ns: raw.core_round_trip_ns,
        far_cores: raw.far_cores,
        back_to_back: raw.back_to_back,
    })
}

/// This rank's means per measured step (hvd_step_stats_t).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepStats {
    pub steps: i64,
    pub warmup_steps: i64,
    pub step_seconds: f64,
    pub exposed_wait_seconds: f64,
    pub negotiate_seconds: f64,
    pub copy_seconds: f64,
    pub transfer_seconds: f64,
    pub bytes_per_step: i64,
    pub bus_bandwidth: f64,
    pub reference_bus_bandwidth: f64,
    pub enabled: bool,
}

pub fn step_stats() -> Result<StepStats> {
    let raw = MaybeUninit::<ffi::hvd_step_stats_t>::zeroed();
    // SAFETY: all-zero bytes are a valid hvd_step_stats_t.
    let mut raw = unsafe { raw.assume_init() };
    raw.struct_size = size_of::<ffi::hvd_step_stats_t>();
    check(unsafe { ffi::hvd_get_step_stats(&mut raw) })?;
    Ok(StepStats {
        steps: raw.steps,
        warmup_steps: raw.warmup_steps,
        step_seconds: raw.step_seconds,
        exposed_wait_seconds: raw.exposed_wait_seconds,
        negotiate_seconds: raw.negotiate_seconds,
        copy_seconds: raw.copy_seconds,
        transfer_seconds: raw.transfer_seconds,
        bytes_per_step: raw.bytes_per_step,
        bus_bandwidth: raw.bus_bandwidth,
        reference_bus_bandwidth: raw.reference_bus_bandwidth,
        enabled: raw.enabled != 0,
    })
}

/// A tensor this rank waited on, with its wait per measured step.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorWait {
    pub name: String,
    pub wait_seconds: f64,
}

/// The (at most `max`) tensors this rank waited on longest, longest first.
pub fn step_top_tensors(max: usize) -> Result<Vec<TensorWait>> {
    let capacity = c_int::try_from(max)
        .map_err(|_| Error::invalid(format!("step_top_tensors: max {max} is too large")))?;
    let mut raw = vec![ffi::hvd_step_tensor_t { name: [0; 128], wait_seconds: 0.0 }; max];
    let mut count: c_int = 0;
    // SAFETY: raw holds capacity entries.
    check(unsafe { ffi::hvd_get_step_top_tensors(raw.as_mut_ptr(), capacity, &mut count) })?;
    raw.truncate(count.clamp(0, capacity) as usize);
    Ok(raw.iter().map(|t| TensorWait { name: text(t.name.as_ptr()), wait_seconds: t.wait_seconds }).collect())
}

/// Marks the end of a training step on this rank (local, cheap).
pub fn mark_step() -> Result<()> {
    check(unsafe { ffi::hvd_mark_step() })
}
