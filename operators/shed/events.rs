//! What the loops decide, as timely log events: a program registers a
//! logger under [`LOG_NAME`] with `worker.log_register()` before building
//! its dataflow, and every shedding loop and throttle on that worker logs
//! one [`LoopEvent`] per period decided. Nobody listening costs nothing:
//! a loop looks its logger up once, when it is built.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;

use super::sample::PeriodSample;

/// The name the loops log under.
pub const LOG_NAME: &str = "equipoise/shed";

/// The container builder of the loops' log: `(time since the worker's
/// logging began, event)` pairs, as timely's own loggers have.
pub type LoopEventBuilder = CapacityContainerBuilder<Vec<(Duration, LoopEvent)>>;

/// Which loop logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopKind {
    /// A shedding loop ([`ShedLoop`](super::ShedLoop)).
    Shed,
    /// A throttle ([`ThrottleLoop`](super::ThrottleLoop)).
    Throttle,
}

/// One period a loop decided on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoopEvent {
    /// The worker whose loop decided.
    pub worker: usize,
    /// Which loop.
    pub kind: LoopKind,
    /// The period's number, counted from 0 at the loop's start: period k
    /// ends k + 1 periods after it, however busy the worker. A shared
    /// loop's workers combine their shares of a number, and decide the
    /// same numbers in the same order.
    pub period: u64,
    /// When the period ended, since the loop started.
    pub period_end: Duration,
    /// How many workers' measurements the decision combined: all of the
    /// loop's workers but those that stopped (their input ended) or were
    /// waited for in vain (stuck for the target's worth of periods, and at
    /// least three), counted as idle.
    pub shares: usize,
    /// What the controller was given: under a shared loop, the workers'
    /// mean rates (a throttle's arrival rate is what its sources asked for).
    pub sample: PeriodSample,
    /// The delay the controller acted on (the Smith prediction, or the
    /// measurement), ms.
    pub controlled_delay_ms: f64,
    /// The rate it set for the next period, records/s per worker (a mean
    /// under a shared loop); `None`: kept as it was over a stall of the
    /// process.
    pub rate: Option<f64>,
    /// The share of the period's arrivals dropped (a throttle drops none).
    pub drop_fraction: f64,
}
