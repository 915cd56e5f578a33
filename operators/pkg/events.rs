//! What the pacts decide, as timely log events: a program registers a
//! logger under [`LOG_NAME`] with `worker.log_register()` before building
//! its dataflow, and every [`Grouped`](super::Grouped) pact on that worker
//! logs, per period of its own, what it sent to each worker
//! ([`PkgEvent::Period`]), and, under D-Choices and W-Choices, the head it
//! spreads wider when that changed ([`PkgEvent::Head`], with the keys'
//! names when the pact has a name function). Nobody listening
//! costs one branch per batch: a pact looks its logger up once, when it is
//! connected.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::logging_core::Logger;

use super::grouping::{HeadKey, Router, SendCounts};

/// The name the pacts log under.
pub const LOG_NAME: &str = "equipoise/pkg";

/// The container builder of the pacts' log: `(time since the worker's
/// logging began, event)` pairs, as timely's own loggers have.
pub type PkgEventBuilder = CapacityContainerBuilder<Vec<(Duration, PkgEvent)>>;

/// How often a pact logs what it sent, unless set with
/// [`Grouped::with_log_period`](super::Grouped::with_log_period).
pub const DEFAULT_LOG_PERIOD: Duration = Duration::from_secs(1);

/// What one sending worker's pact decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PkgEvent {
    /// The records this worker sent through one pact over one period (the
    /// last, shorter one when the pact is dropped).
    Period {
        /// The sending worker.
        worker: usize,
        /// The pact's channel, as timely's own channel events name it.
        channel: usize,
        /// Records sent to each worker over the period, by worker index.
        sent: Vec<u64>,
        /// The largest of `sent` less their mean, in records: the PKG
        /// papers' imbalance, over this period and this sender.
        imbalance: f64,
        /// `imbalance` ÷ the records sent over the period (0 when none).
        imbalance_fraction: f64,
    },
    /// The head changed over the period: keys entered or left it, or
    /// D-Choices' d changed. Logged at the period's end (keys near the
    /// threshold enter and leave many times a second), with the head then.
    Head {
        /// The sending worker.
        worker: usize,
        /// The pact's channel.
        channel: usize,
        /// How many times the head changed over the period.
        changes: u64,
        /// The number of workers head keys get now (D-Choices' d; every
        /// worker under W-Choices).
        choices: usize,
        /// The head now, in no particular order (empty: no key stands out).
        keys: Vec<HeadKey>,
        /// The head keys' names (their `Debug` forms) by fingerprint, those
        /// known: a pact names them only when given a name function
        /// ([`Grouped::with_key_names`](super::Grouped::with_key_names)).
        #[serde(default)]
        names: Vec<(u64, String)>,
    },
}

/// A pact's logging: where it logs, and what it logged last.
pub(crate) struct PactLog {
    logger: Logger<PkgEventBuilder>,
    worker: usize,
    channel: usize,
    period: Duration,
    next: Instant,
    // The pact's send counts, and what they were at the last period's end.
    counts: SendCounts,
    logged: Vec<u64>,
    head_version: u64,
    // How many head keys the last head event named.
    named: usize,
}

impl PactLog {
    pub(crate) fn new(
        logger: Logger<PkgEventBuilder>,
        worker: usize,
        channel: usize,
        period: Duration,
        counts: SendCounts,
    ) -> Self {
        PactLog {
            counts,
            logger,
            worker,
            channel,
            period,
            next: Instant::now() + period,
            logged: Vec::new(),
            head_version: 0,
            named: 0,
        }
    }

    /// Whether the period has ended (checked after each batch); if so, the
    /// next one begins.
    pub(crate) fn due(&mut self) -> bool {
        let now = Instant::now();
        let due = now >= self.next;
        if due {
            self.next = now + self.period;
        }
        due
    }

    /// At a period's end, and when the pact is dropped: a head event if the
    /// router's head changed, or more of its keys were named, since the
    /// last.
    pub(crate) fn head(&mut self, router: &impl Router, names: Vec<(u64, String)>) {
        let version = router.head_version();
        if version != self.head_version || names.len() > self.named {
            let changes = version - self.head_version;
            self.head_version = version;
            self.named = names.len();
            let (choices, keys) = router.head();
            self.logger.log(PkgEvent::Head {
                worker: self.worker,
                channel: self.channel,
                changes,
                choices,
                keys,
                names,
            });
        }
    }

    /// The period's event: what was sent since the last one.
    pub(crate) fn log_period(&mut self) {
        let counts = self.counts.get();
        self.logged.resize(counts.len(), 0);
        let sent: Vec<u64> = counts.iter().zip(&self.logged).map(|(now, then)| now - then).collect();
        self.logged.copy_from_slice(&counts);
        let records: u64 = sent.iter().sum();
        let max = sent.iter().copied().max().unwrap_or(0) as f64;
        let imbalance = if sent.is_empty() {
            0.0
        } else {
            max - records as f64 / sent.len() as f64
        };
        let imbalance_fraction = if records == 0 { 0.0 } else { imbalance / records as f64 };
        self.logger.log(PkgEvent::Period {
            worker: self.worker,
            channel: self.channel,
            sent,
            imbalance,
            imbalance_fraction,
        });
    }
}

impl Drop for PactLog {
    /// The last, shorter period's event, if anything was sent in it.
    fn drop(&mut self) {
        if self.counts.total() > self.logged.iter().sum::<u64>() {
            self.log_period();
        }
    }
}
