//! What the skew-proof differential operators decide, as timely log
//! events: a program registers a logger under [`LOG_NAME`] with
//! `worker.log_register()` before building its dataflow. The deciding
//! worker logs each key it finds hot ([`SkewEvent::Hot`]); every worker
//! logs, as the hot keys move on from time to time (and once at the end),
//! how many of its updates it sent to each worker since it last did
//! ([`SkewEvent::Routed`]), and how many of those it received it passed on
//! ([`SkewEvent::PassedOn`]). Nobody listening costs a branch per update.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::logging_core::Logger;

/// The name the skew-proof operators log under.
pub const LOG_NAME: &str = "equipoise/skew";

/// The container builder of the skew-proof operators' log: `(time since
/// the worker's logging began, event)` pairs, as timely's own loggers have.
pub type SkewEventBuilder = CapacityContainerBuilder<Vec<(Duration, SkewEvent)>>;

/// What one worker of a skew-proof operator decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SkewEvent {
    /// A key turned hot, or was dealt anew.
    Hot {
        /// The key's hash, as differential's exchange routes it.
        key: u64,
        /// The key itself, in its `Debug` form.
        #[serde(default)]
        name: String,
        /// The workers its updates go to from now on.
        workers: Vec<usize>,
        /// The share of its updates each of `workers` takes.
        shares: Vec<f64>,
        /// The input whose updates of the key are split, by its place
        /// among the operator's inputs (0 for the first; a join copies the
        /// other input's updates of the key to `workers`).
        side: usize,
    },
    /// The updates this worker sent on since its last `Routed`.
    Routed {
        /// The sending worker.
        worker: usize,
        /// Updates sent to each worker, by worker index.
        sent: Vec<u64>,
    },
    /// Updates of a two-level reduction (`skew_min`, `skew_max`,
    /// `skew_reduce_associative`) routed to this worker, their key's owner,
    /// before it learned their key's deal (each time's updates wait there
    /// for its deals), that it passed on to the deal's workers without
    /// reducing them (they are counted again in its `Routed`, as sent to
    /// those workers), since it last logged them. The joins hold each
    /// time's updates at their senders instead, and pass nothing on.
    PassedOn {
        /// The worker that passed them on.
        worker: usize,
        /// How many.
        updates: u64,
    },
    /// The keys a worker combines from now on before they are counted
    /// (`skew_count`, `skew_distinct`), as it decides anew every few
    /// thousand updates.
    Combined {
        /// The combining worker.
        worker: usize,
        /// The keys' hashes, as differential's exchange routes them.
        keys: Vec<u64>,
    },
}

/// The updates one worker sent to each worker since it last logged them,
/// counted only while someone listens (otherwise empty: a branch per
/// update).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sent(Vec<u64>);

impl Sent {
    /// Counts over `peers` workers if `listening`.
    pub(crate) fn new(peers: usize, listening: bool) -> Self {
        Sent(vec![0; if listening { peers } else { 0 }])
    }

    /// Whether anyone listens (else counting is skipped).
    #[inline]
    pub(crate) fn listening(&self) -> bool {
        !self.0.is_empty()
    }

    /// One more update sent to `worker`.
    #[inline]
    pub(crate) fn to(&mut self, worker: usize) {
        if let Some(sent) = self.0.get_mut(worker) {
            *sent += 1;
        }
    }

    /// Adds the counts since the last call to `total` (one per worker),
    /// and starts again from zero.
    pub(crate) fn take_into(&mut self, total: &mut [u64]) {
        for (total, sent) in total.iter_mut().zip(self.0.iter_mut()) {
            *total += std::mem::take(sent);
        }
    }
}

/// What one worker's routing logs: the updates sent to each worker, and
/// those received and passed on to their deal's workers. What is still
/// counted when the routes are dropped (after every operator that counts
/// in them has finished: the last time's updates, let go once its deals
/// were learned, and their copies) is logged then.
pub(crate) struct RouteLog {
    sent: Sent,
    passed: u64,
    /// The logger and this worker's index, while anyone listens.
    logger: Option<(Logger<SkewEventBuilder>, usize)>,
}

impl RouteLog {
    /// Worker `me`'s log over `peers` workers, counting only if `logger`.
    pub(crate) fn new(me: usize, peers: usize, logger: Option<Logger<SkewEventBuilder>>) -> Self {
        RouteLog {
            sent: Sent::new(peers, logger.is_some()),
            passed: 0,
            logger: logger.map(|logger| (logger, me)),
        }
    }

    /// Whether anyone listens (else counting is skipped).
    #[inline]
    pub(crate) fn listening(&self) -> bool {
        self.sent.listening()
    }

    /// One more update sent to `worker`.
    #[inline]
    pub(crate) fn sent_to(&mut self, worker: usize) {
        self.sent.to(worker);
    }

    /// `updates` received here passed on to their deal's workers.
    pub(crate) fn passed_on(&mut self, updates: u64) {
        self.passed += updates;
    }

    /// The updates passed on since the last call.
    pub(crate) fn take_passed_on(&mut self) -> u64 {
        std::mem::take(&mut self.passed)
    }

    /// Adds what was sent since the last call to `total`, per worker.
    pub(crate) fn take_sent(&mut self, total: &mut [u64]) {
        self.sent.take_into(total);
    }
}

impl Drop for RouteLog {
    fn drop(&mut self) {
        if let Some((logger, me)) = &self.logger {
            let mut sent = vec![0; self.sent.0.len()];
            self.sent.take_into(&mut sent);
            log_sent(logger, *me, sent);
            log_passed_on(logger, *me, std::mem::take(&mut self.passed));
        }
    }
}

/// Logs `updates` passed on by `worker` as [`SkewEvent::PassedOn`], if any.
pub(crate) fn log_passed_on(logger: &Logger<SkewEventBuilder>, worker: usize, updates: u64) {
    if updates > 0 {
        logger.log(SkewEvent::PassedOn { worker, updates });
    }
}

/// Logs `sent` (updates per worker) as [`SkewEvent::Routed`] by `worker`,
/// if any update was sent.
pub(crate) fn log_sent(logger: &Logger<SkewEventBuilder>, worker: usize, sent: Vec<u64>) {
    if sent.iter().any(|&count| count > 0) {
        logger.log(SkewEvent::Routed { worker, sent });
    }
}
