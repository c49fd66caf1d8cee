//! Per-operation options (hvd_op_options_t): process set and scale factors.
//! Buffers are host memory (Rust slices), so the device is always HVD_DEVICE_CPU.
use crate::ffi;
use crate::process_set::ProcessSet;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The ranks that take part; `ProcessSet::GLOBAL` by default.
    pub process_set: ProcessSet,
    /// Multiplies the input before a reduction (1.0).
    pub prescale_factor: f64,
    /// Multiplies the result after it (1.0).
    pub postscale_factor: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { process_set: ProcessSet::GLOBAL, prescale_factor: 1.0, postscale_factor: 1.0 }
    }
}

impl Options {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn process_set(mut self, set: ProcessSet) -> Self {
        self.process_set = set;
        self
    }

    pub fn prescale(mut self, factor: f64) -> Self {
        self.prescale_factor = factor;
        self
    }

    pub fn postscale(mut self, factor: f64) -> Self {
        self.postscale_factor = factor;
        self
    }

    pub(crate) fn raw(&self) -> ffi::hvd_op_options_t {
        let mut raw = std::mem::MaybeUninit::<ffi::hvd_op_options_t>::zeroed();
        // SAFETY: hvd_op_options_init fills every field (it cannot fail on a valid
        // pointer, and the zeroed struct is a valid value either way).
        let mut raw = unsafe {
            ffi::hvd_op_options_init(raw.as_mut_ptr());
            raw.assume_init()
        };
        raw.process_set_id = self.process_set.id();
        raw.prescale_factor = self.prescale_factor;
        raw.postscale_factor = self.postscale_factor;
        raw
    }
}
