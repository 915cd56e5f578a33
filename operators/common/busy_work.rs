//! Busy work that costs real CPU, so that load imbalance costs real time.
//!
//! The work is a fixed amount of computation, calibrated once per process to
//! take the requested time on an idle core. (Spinning until a deadline would
//! not do: a worker preempted by another would "work" while not running, and
//! an oversubscribed machine would hide the cost of imbalance.)

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::hash::splitmix64;

/// Iterations of [`burn`] per microsecond on this machine (measured once).
fn iterations_per_micro() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        // The fastest of a few trials: the one least disturbed by other load.
        let trial = 2_000_000u64;
        (0..5)
            .map(|_| {
                let start = Instant::now();
                burn(trial);
                trial as f64 / (start.elapsed().as_secs_f64() * 1e6)
            })
            .fold(0.0, f64::max)
    })
}

fn burn(iterations: u64) {
    let mut state = 0u64;
    for index in 0..iterations {
        state = splitmix64(black_box(state ^ index));
    }
    black_box(state);
}

/// A fixed amount of computation that takes about `duration` on an idle core.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BusyWork {
    iterations: u64,
}

impl BusyWork {
    /// Work worth `duration` on this machine (calibrates on first use).
    pub fn new(duration: Duration) -> Self {
        if duration.is_zero() {
            return BusyWork::default();
        }
        BusyWork {
            iterations: (duration.as_secs_f64() * 1e6 * iterations_per_micro()).round().max(1.0) as u64,
        }
    }

    /// Does the work.
    #[inline]
    pub fn run(&self) {
        self.repeat(1);
    }

    /// Does the work `times` times.
    #[inline]
    pub fn repeat(&self, times: u64) {
        if self.iterations > 0 && times > 0 {
            burn(self.iterations * times);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_scales_with_the_requested_duration() {
        assert_eq!(BusyWork::new(Duration::ZERO), BusyWork::default());
        let small = BusyWork::new(Duration::from_micros(10));
        let large = BusyWork::new(Duration::from_micros(1000));
        assert!(small.iterations > 0);
        let ratio = large.iterations as f64 / small.iterations as f64;
        assert!((ratio - 100.0).abs() < 1.0, "{ratio}");
    }
}
