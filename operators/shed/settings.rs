//! What a loop is set to hold, how often it decides, and how it reads time:
//! the settings a shedding loop and a throttle share.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::common::Error;

use super::predictor::Prediction;

/// When a timestamp began, for the frontier delay.
#[derive(Default)]
pub enum Clock<T> {
    /// When this operator saw the first record of that time: right for
    /// epochs that are batches, numbered as they open.
    #[default]
    FirstRecord,
    /// A function of the timestamp, e.g. `start + t ms`.
    Stamp(Rc<dyn Fn(&T) -> Instant>),
}

// By hand: derived, both would ask for `T: Clone`.
impl<T> Clone for Clock<T> {
    fn clone(&self) -> Self {
        match self {
            Clock::FirstRecord => Clock::FirstRecord,
            Clock::Stamp(clock) => Clock::Stamp(Rc::clone(clock)),
        }
    }
}

/// Settings of a loop: a shedding loop, or a throttle's.
///
/// A target or period under a millisecond is taken as one millisecond
/// (the loop samples the delay in milliseconds); [`LoopSettings::validate`]
/// refuses them with an error, for settings a program reads from its users.
#[derive(Clone)]
pub struct LoopSettings<T> {
    /// D_t: the delay the loop keeps admitted records under.
    pub target: Duration,
    /// W: how often the controller runs.
    pub period: Duration,
    /// What delay the controller sees: the measurement or the Smith prediction.
    pub prediction: Prediction,
    /// When a timestamp began.
    pub clock: Clock<T>,
    /// One loop across workers (the default): every worker's loop hears
    /// the others' rates each period, on a channel of its own outside
    /// progress tracking, so every controller sees the same sample (the
    /// workers' mean rates) and every worker drops the same fraction of its
    /// arrivals (a throttle: the readers' allowances add up to the rate),
    /// whichever workers read. `false`: each worker's loop runs on its own
    /// rates alone, and readers that admit more than their share are not
    /// told.
    pub global: bool,
    /// How many recent periods the loop's figures keep
    /// ([`LoopFigures::periods`](super::figures::LoopFigures::periods), a throttle's `ThrottleFigures::periods`):
    /// at least this many, at most twice as many, so that a loop on a
    /// stream that never ends keeps a bounded history (a row is about
    /// 100 bytes). Every period decided is also a [`LoopEvent`](super::events::LoopEvent)
    /// in timely's logging, for a program that keeps them all.
    pub history: usize,
}

/// The shortest target and period a loop runs with.
const MIN_DURATION: Duration = Duration::from_millis(1);

/// The periods a loop's figures keep by default: a minute at 100 ms.
pub const DEFAULT_HISTORY: usize = 600;

impl<T> LoopSettings<T> {
    /// A target delay; a period of a third of it, at most 100 ms; the Smith
    /// prediction, the first-record clock, one loop across
    /// workers, the last [`DEFAULT_HISTORY`] periods kept.
    pub fn new(target: Duration) -> Self {
        LoopSettings {
            target,
            period: (target / 3).clamp(Duration::from_millis(1), Duration::from_millis(100)),
            prediction: Prediction::Smith,
            clock: Clock::FirstRecord,
            global: true,
            history: DEFAULT_HISTORY,
        }
    }

    /// An error naming the first setting the loop would not take as given:
    /// a target or a period under a millisecond.
    pub fn validate(&self) -> Result<(), Error> {
        for (what, value) in [("loop target", self.target), ("loop period", self.period)] {
            if value < MIN_DURATION {
                return Err(Error::invalid(what, format!("{value:?}: must be at least 1 ms")));
            }
        }
        Ok(())
    }

    /// The settings the loop runs with: a target or period under a
    /// millisecond taken as one.
    pub(crate) fn sanitized(&self) -> Self {
        LoopSettings {
            target: self.target.max(MIN_DURATION),
            period: self.period.max(MIN_DURATION),
            clock: self.clock.clone(),
            ..*self
        }
    }

    /// The same with the controller running every `period`.
    pub fn with_period(self, period: Duration) -> Self {
        LoopSettings { period, ..self }
    }

    /// The same with timestamps read by `clock`.
    pub fn with_clock(self, clock: impl Fn(&T) -> Instant + 'static) -> Self {
        LoopSettings {
            clock: Clock::Stamp(Rc::new(clock)),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_or_period_under_a_millisecond_is_refused_or_taken_as_one() {
        let settings = LoopSettings::<u64>::new(Duration::from_millis(300));
        assert!(settings.validate().is_ok());
        let zero = settings.clone().with_period(Duration::ZERO);
        let error = zero.validate().unwrap_err().to_string();
        assert!(error.contains("loop period"), "{error}");
        assert_eq!(zero.sanitized().period, MIN_DURATION);
        let none = LoopSettings::<u64>::new(Duration::from_micros(10));
        assert!(none.validate().unwrap_err().to_string().contains("loop target"));
        assert_eq!(none.sanitized().target, MIN_DURATION);
    }
}
