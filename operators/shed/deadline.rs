//! Dropping, where the work happens, the admitted records that can no
//! longer make the loop's target.
//!
//! A loop admits records for the capacity it measured. When the cost of a
//! record steps up (or another program takes a core), the records already
//! admitted take longer than the loop planned for, and those at the back of
//! the backlog finish past the target whatever the loop does next. Working
//! on them spends capacity on records whose result is already late, which
//! makes the next ones late too. A [`Deadline`] given to
//! [`TimeSliced::time_sliced_within`](super::TimeSliced::time_sliced_within)
//! drops a record instead when its time began at least the target ago, before
//! any work is spent on it, and counts it in the loop's figures.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::loop_figures::LoopFigures;
use super::settings::Clock;

/// The loop's target, applied by a work stage (see the module docs); from
/// [`LoopHandle::deadline`](super::LoopHandle::deadline).
#[derive(Clone)]
pub struct Deadline<T> {
    pub(crate) target: Duration,
    clock: Clock<T>,
    figures: Rc<RefCell<LoopFigures>>,
}

impl<T> Deadline<T> {
    /// The deadline of a loop with `target` and `clock`, counting what the
    /// work stage drops in the loop's `figures`. Under the default
    /// [`Clock::FirstRecord`] a time begins when the work stage first sees
    /// it, a little after the loop did: the deadline errs towards keeping.
    pub(crate) fn new(target: Duration, clock: Clock<T>, figures: Rc<RefCell<LoopFigures>>) -> Self {
        Deadline { target, clock, figures }
    }

    /// Counts `late` records dropped.
    pub(crate) fn count(&self, late: u64) {
        self.figures.borrow_mut().late += late;
    }

    /// When `time` began by the loop's clock; under the first-record clock,
    /// `seen()`: when the work stage first saw it (asked of no other clock,
    /// so a stamp clock keeps no record of the times it saw).
    pub(crate) fn began(&self, time: &T, seen: impl FnOnce() -> Instant) -> Instant {
        match &self.clock {
            Clock::FirstRecord => seen(),
            Clock::Stamp(clock) => clock(time),
        }
    }
}
