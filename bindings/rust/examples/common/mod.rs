//! Shared by the examples: a check that fails the run with a message, and the
//! runner that turns the outcome into the exit status.
use std::process::ExitCode;

#[allow(dead_code)]
pub type Outcome = Result<(), Box<dyn std::error::Error>>;

/// Fails the example with the formatted message unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!("rank {}: {}", hvd::rank().unwrap_or(0), format!($($msg)+)).into());
        }
    };
}

/// Runs the example; on success rank 0 prints `summary`, on failure every failing
/// rank prints why and the process exits non-zero.
pub fn main(example: &str, run: fn() -> Result<String, Box<dyn std::error::Error>>) -> ExitCode {
    match run() {
        Ok(summary) => {
            if hvd::rank().unwrap_or(0) == 0 {
                println!("{example}: {summary}");
            }
            let _ = hvd::shutdown();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{example} example failed: {e}");
            ExitCode::FAILURE
        }
    }
}
