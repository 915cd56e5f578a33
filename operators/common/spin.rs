//! Busy work that costs real CPU time, so that load imbalance costs real time.

use std::time::{Duration, Instant};

/// Spins (without sleeping or yielding) for `duration`.
#[inline]
pub fn spin_for(duration: Duration) {
    if duration.is_zero() {
        return;
    }
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
}
