//! The loop's periods, numbered by the wall clock: period `n` is the `n`th
//! period of the loop's length since the Unix epoch. Every worker of a
//! shared loop numbers its periods alike, whenever its loop started and
//! however late its activations come, so that the workers' shares of a
//! period meet: numbered by each worker's own count of the periods it
//! ended, a worker that comes a little later each period (a busy one)
//! falls behind its peers by one period in every few hundred, and past a
//! few periods its peers decide without it for the rest of the run.
//!
//! The clock is read once, when the loop starts; from there on the
//! monotonic clock counts, so a wall clock set back or forward later
//! changes nothing.

use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, Clone, Copy)]
pub(crate) struct PeriodGrid {
    /// When period `first` began, by the monotonic clock.
    anchor: Instant,
    length: Duration,
    /// The period under way when the loop started.
    first: u64,
}

impl PeriodGrid {
    /// Periods of `length`, the loop starting `now`.
    pub(crate) fn new(now: Instant, length: Duration) -> Self {
        let since_epoch = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        Self::at(now, since_epoch, length)
    }

    /// The same with the wall clock reading `since_epoch` at `now`.
    fn at(now: Instant, since_epoch: Duration, length: Duration) -> Self {
        let nanos = length.as_nanos().max(1);
        let into = Duration::from_nanos((since_epoch.as_nanos() % nanos) as u64);
        let first = (since_epoch.as_nanos() / nanos) as u64;
        match now.checked_sub(into) {
            Some(anchor) => PeriodGrid { anchor, length, first },
            // A monotonic clock younger than a period (only just booted):
            // the first period starts now, one period early or late.
            None => PeriodGrid {
                anchor: now,
                length,
                first,
            },
        }
    }

    /// The period under way when the loop started.
    pub(crate) fn first(&self) -> u64 {
        self.first
    }

    /// The periods' length.
    pub(crate) fn length(&self) -> Duration {
        self.length
    }

    /// The period that starts at the boundary nearest to `now`.
    pub(crate) fn nearest_start(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.anchor).as_nanos();
        let length = self.length.as_nanos().max(1);
        self.first + ((since + length / 2) / length) as u64
    }

    /// The period under way at `now`.
    pub(crate) fn current(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.anchor).as_nanos();
        self.first + (since / self.length.as_nanos().max(1)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_started_apart_number_the_same_instant_alike() {
        let length = Duration::from_millis(100);
        let base = Instant::now() + Duration::from_secs(10);
        let wall = Duration::from_secs(1_700_000_000) + Duration::from_millis(1_234);
        // One worker starts at `base`, another 2.37 s later; both clocks
        // agree.
        let early = PeriodGrid::at(base, wall, length);
        let late_start = Duration::from_millis(2_370);
        let late = PeriodGrid::at(base + late_start, wall + late_start, length);
        assert_eq!(early.first(), 17_000_000_012);
        assert_eq!(late.first(), 17_000_000_036);
        for ms in [2_400, 2_465, 2_466, 10_000, 3_600_000] {
            let at = base + Duration::from_millis(ms);
            assert_eq!(early.current(at), late.current(at), "{ms} ms after the first start");
        }
        // The boundary nearest 2.44 s after the first start is 2.466 s.
        assert_eq!(
            early.nearest_start(base + Duration::from_millis(2_440)),
            early.current(base + Duration::from_millis(2_466))
        );
        assert_eq!(
            early.nearest_start(base + Duration::from_millis(2_400)),
            early.current(base + Duration::from_millis(2_400))
        );
        // Period 12 of the epoch's second ended 66 ms after the start.
        assert_eq!(early.current(base + Duration::from_millis(65)), 17_000_000_012);
        assert_eq!(early.current(base + Duration::from_millis(66)), 17_000_000_013);
    }
}
