//! What one worker's logs say about each operator, summed as the events
//! come: the records its input channels delivered here, the time it was
//! scheduled here, and (for an arrangement) the records it holds here.
//! One entry per operator and channel: bounded by the dataflows built.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use timely::logging::{StartStop, TimelyEvent};

/// One operator's figures on one worker, as exchanged for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct OperatorFigures {
    /// Where it is in the dataflow: the same on every worker.
    pub(crate) address: Vec<usize>,
    pub(crate) name: String,
    /// Records delivered to its inputs on this worker.
    pub(crate) records: u64,
    /// Time scheduled on this worker, its children's excluded.
    pub(crate) busy_ns: u64,
    /// Records its arrangement holds on this worker, if it has one: now,
    /// and the most at once.
    pub(crate) arranged: Option<(i64, i64)>,
    /// Whether any of those records came from another worker.
    pub(crate) exchanged: bool,
    /// The names of the operators its outputs feed.
    pub(crate) feeds: Vec<String>,
}

/// An operator as logged on this worker.
#[derive(Debug, Default)]
struct Operator {
    address: Vec<usize>,
    name: String,
    busy: Duration,
    arranged: Option<(i64, i64)>,
}

/// One worker's figures so far, fed by its timely and differential logs.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    /// By the operator's worker-unique id.
    operators: HashMap<usize, Operator>,
    /// Each channel's source and target operator addresses.
    channels: HashMap<usize, (Vec<usize>, Vec<usize>)>,
    /// Records each channel delivered here, and whether any came from
    /// another worker.
    delivered: HashMap<usize, (u64, bool)>,
    /// Operators being scheduled, innermost last, with when each started
    /// and how long its children ran since.
    running: Vec<(usize, Duration, Duration)>,
    /// Dataflows (by address) whose operators are not reported: the
    /// doctor's own.
    hidden: Vec<Vec<usize>>,
    /// The name of the dataflows to hide.
    hide: &'static str,
}

impl Figures {
    /// Figures that leave out the dataflows named `hide`.
    pub(crate) fn hiding(hide: &'static str) -> Self {
        Figures {
            hide,
            ..Figures::default()
        }
    }

    fn hidden(&self, address: &[usize]) -> bool {
        self.hidden.iter().any(|root| address.starts_with(root))
    }

    /// One of timely's events, logged at `time` on this worker.
    pub(crate) fn timely(&mut self, time: Duration, event: &TimelyEvent) {
        match event {
            TimelyEvent::Operates(op) => {
                if op.addr.len() == 1 && op.name == self.hide {
                    self.hidden.push(op.addr.clone());
                }
                if !self.hidden(&op.addr) {
                    let operator = Operator {
                        address: op.addr.clone(),
                        name: op.name.clone(),
                        ..Operator::default()
                    };
                    self.operators.insert(op.id, operator);
                }
            }
            TimelyEvent::Channels(channel) if !self.hidden(&channel.scope_addr) => {
                let at = |index: usize| {
                    let mut address = channel.scope_addr.clone();
                    address.push(index);
                    address
                };
                self.channels
                    .insert(channel.id, (at(channel.source.0), at(channel.target.0)));
            }
            TimelyEvent::Messages(message) if !message.is_send && self.channels.contains_key(&message.channel) => {
                let delivered = self.delivered.entry(message.channel).or_default();
                delivered.0 += message.record_count.max(0) as u64;
                delivered.1 |= message.source != message.target;
            }
            TimelyEvent::Schedule(schedule) => self.schedule(time, schedule.id, schedule.start_stop),
            _ => {}
        }
    }

    /// Operator `id` started or stopped at `time`: a stop charges the
    /// time since its start, less its children's, to it (and the whole to
    /// the operator it ran in, as its child's).
    fn schedule(&mut self, time: Duration, id: usize, start_stop: StartStop) {
        match start_stop {
            StartStop::Start => self.running.push((id, time, Duration::ZERO)),
            StartStop::Stop => {
                let Some(at) = self.running.iter().rposition(|&(running, _, _)| running == id) else {
                    return;
                };
                let (_, started, children) = self.running.remove(at);
                let spent = time.saturating_sub(started);
                if let Some(operator) = self.operators.get_mut(&id) {
                    operator.busy += spent.saturating_sub(children);
                }
                if let Some(parent) = self.running.last_mut() {
                    parent.2 += spent;
                }
            }
        }
    }

    /// A change of `delta` records in the arrangement of operator `id`.
    #[cfg(feature = "differential")]
    pub(crate) fn arranged(&mut self, id: usize, delta: i64) {
        if let Some(operator) = self.operators.get_mut(&id) {
            let (now, most) = operator.arranged.get_or_insert((0, 0));
            *now += delta;
            *most = (*most).max(*now);
        }
    }

    /// Every operator that is not a scope, with its figures, in address order.
    pub(crate) fn operators(&self) -> Vec<OperatorFigures> {
        let by_address: HashMap<&[usize], &Operator> =
            self.operators.values().map(|op| (op.address.as_slice(), op)).collect();
        let mut records: HashMap<&[usize], (u64, bool)> = HashMap::new();
        let mut feeds: HashMap<&[usize], Vec<String>> = HashMap::new();
        for (channel, (source, target)) in &self.channels {
            let (delivered, exchanged) = self.delivered.get(channel).copied().unwrap_or_default();
            let records = records.entry(target.as_slice()).or_default();
            records.0 += delivered;
            records.1 |= exchanged;
            if let Some(target) = by_address.get(target.as_slice()) {
                feeds.entry(source.as_slice()).or_default().push(target.name.clone());
            }
        }
        let scope = |address: &[usize]| {
            by_address
                .keys()
                .any(|other| other.len() > address.len() && other.starts_with(address))
        };
        let mut operators: Vec<OperatorFigures> = self
            .operators
            .values()
            .filter(|op| !scope(&op.address))
            .map(|op| OperatorFigures {
                address: op.address.clone(),
                name: op.name.clone(),
                records: records.get(op.address.as_slice()).map_or(0, |&(records, _)| records),
                exchanged: records
                    .get(op.address.as_slice())
                    .is_some_and(|&(_, exchanged)| exchanged),
                busy_ns: op.busy.as_nanos() as u64,
                arranged: op.arranged,
                feeds: feeds.remove(op.address.as_slice()).unwrap_or_default(),
            })
            .collect();
        operators.sort_by(|a, b| a.address.cmp(&b.address));
        operators
    }
}
