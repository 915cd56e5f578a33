//! What a shedding loop did: its counts and its recent periods.

use super::sample::PeriodSample;

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One period as the loop saw it: the sample its controller got (under
/// [`LoopSettings::global`](super::LoopSettings::global), the workers' mean rates).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopPeriod {
    /// When the period ended, since the loop started.
    pub end: Duration,
    /// What the controller was given.
    pub sample: PeriodSample,
    /// The delay it controlled on (the prediction, or the measurement), ms.
    pub controlled_delay_ms: f64,
    /// The drop fraction during the period.
    pub drop_fraction: f64,
}

/// What a loop did so far on this worker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopFigures {
    /// Records that reached the loop.
    pub arrived: u64,
    /// Records it dropped.
    pub dropped: u64,
    /// Admitted records whose time the output has completed. Read through
    /// [`LoopHandle::figures`](super::LoopHandle::figures), which looks at the output first, it is
    /// exact at any moment: once the output is done,
    /// `arrived = dropped + processed`, however the input ended.
    pub processed: u64,
    /// Admitted records a work stage on this worker dropped under the
    /// loop's [`Deadline`](super::Deadline) because their time began at
    /// least the target ago. They are counted in `processed` by the worker
    /// that admitted them (their time completes like any other), so over
    /// all workers `processed − late` records were worked on and
    /// `dropped + late` lost.
    pub late: u64,
    /// One row per period: the most recent [`LoopSettings::history`](super::LoopSettings::history).
    pub periods: Vec<LoopPeriod>,
}
