//! What one worker's logs say about each operator, summed as the events
//! come: the records its input channels delivered here, the time it was
//! scheduled here, and (for an arrangement) the records it holds here.
//! One entry per operator and channel, of the dataflows running and the
//! last [`KEPT_FINISHED`] finished: bounded however long a program runs.

use std::collections::{HashMap, HashSet, VecDeque};
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
    /// The names of the operators that feed its inputs.
    pub(crate) fed_by: Vec<String>,
}

/// An operator as logged on this worker.
#[derive(Debug, Default)]
struct Operator {
    address: Vec<usize>,
    name: String,
    busy: Duration,
    arranged: Option<(i64, i64)>,
}

/// Finished dataflows whose figures are kept (the oldest go first).
pub(crate) const KEPT_FINISHED: usize = 32;

/// Operator names by the address of the operator they connect to.
type Names<'a> = HashMap<&'a [usize], Vec<String>>;

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
    /// Finished dataflows (by address), the oldest first.
    finished: VecDeque<Vec<usize>>,
}

impl Figures {
    /// Figures that leave out the dataflows named `hide`.
    pub(crate) fn hiding(hide: &'static str) -> Self {
        Figures {
            hide,
            ..Figures::default()
        }
    }

    /// Forgets the dataflows hidden so far, once they are built (their
    /// later events name operators and channels no longer kept).
    pub(crate) fn forget_hidden(&mut self) {
        self.hidden.clear();
    }

    fn hidden(&self, address: &[usize]) -> bool {
        self.hidden.iter().any(|root| address.starts_with(root))
    }

    /// One of timely's events, logged at `time` on this worker.
    pub(crate) fn timely(&mut self, time: Duration, event: &TimelyEvent) {
        match event {
            TimelyEvent::Operates(op) => {
                if op.addr.len() == 1 && op.name == self.hide {
                    // A dataflow is logged after its operators: they go now.
                    self.forget(&op.addr);
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
            TimelyEvent::Shutdown(shutdown) => self.shut_down(shutdown.id),
            _ => {}
        }
    }

    /// Operator `id` shut down: if it is a dataflow, it is kept among the
    /// finished, and the oldest beyond [`KEPT_FINISHED`] is forgotten.
    fn shut_down(&mut self, id: usize) {
        let Some(root) = self.operators.get(&id).map(|op| op.address.clone()) else {
            return;
        };
        if root.len() == 1 {
            self.finished.push_back(root);
            while self.finished.len() > KEPT_FINISHED {
                let oldest = self.finished.pop_front().expect("more than kept");
                self.forget(&oldest);
            }
        }
    }

    /// Forgets the operators and channels of the dataflow at `root`.
    fn forget(&mut self, root: &[usize]) {
        self.operators.retain(|_, op| !op.address.starts_with(root));
        let delivered = &mut self.delivered;
        self.channels.retain(|channel, (_, target)| {
            let keep = !target.starts_with(root);
            if !keep {
                delivered.remove(channel);
            }
            keep
        });
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
        let (mut feeds, mut fed_by): (Names, Names) = Default::default();
        for (channel, (source, target)) in &self.channels {
            let (delivered, exchanged) = self.delivered.get(channel).copied().unwrap_or_default();
            let records = records.entry(target.as_slice()).or_default();
            records.0 += delivered;
            records.1 |= exchanged;
            if let Some(target) = by_address.get(target.as_slice()) {
                feeds.entry(source.as_slice()).or_default().push(target.name.clone());
            }
            if let Some(source) = by_address.get(source.as_slice()) {
                fed_by.entry(target.as_slice()).or_default().push(source.name.clone());
            }
        }
        // A scope is an operator that others are inside.
        let parents: HashSet<&[usize]> = by_address
            .keys()
            .filter_map(|address| address.split_last().map(|(_, parent)| parent))
            .collect();
        let scope = |address: &[usize]| parents.contains(address);
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
                fed_by: fed_by.remove(op.address.as_slice()).unwrap_or_default(),
            })
            .collect();
        operators.sort_by(|a, b| a.address.cmp(&b.address));
        operators
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use timely::logging::{ChannelsEvent, MessagesEvent, OperatesEvent, ScheduleEvent};

    fn operates(id: usize, addr: &[usize], name: &str) -> TimelyEvent {
        TimelyEvent::Operates(OperatesEvent {
            id,
            addr: addr.to_vec(),
            name: name.to_owned(),
        })
    }

    fn received(channel: usize, source: usize, records: i64) -> TimelyEvent {
        TimelyEvent::Messages(MessagesEvent {
            is_send: false,
            channel,
            source,
            target: 0,
            seq_no: 0,
            record_count: records,
        })
    }

    #[test]
    fn records_time_and_arrangements_by_operator_with_scopes_and_hidden_dataflows_left_out() {
        let mut figures = Figures::hiding("Hidden");
        let at = |ms: u64| Duration::from_millis(ms);
        for event in [
            operates(1, &[0, 1], "Source"),
            operates(2, &[0, 2], "Arrange"),
            operates(0, &[0], "Dataflow"),
        ] {
            figures.timely(at(0), &event);
        }
        let channel = ChannelsEvent {
            id: 7,
            scope_addr: vec![0],
            source: (1, 0),
            target: (2, 0),
            typ: String::new(),
        };
        figures.timely(at(0), &TimelyEvent::Channels(channel));
        // Another worker's records and this one's own; sends are not counted.
        figures.timely(at(0), &received(7, 1, 30));
        figures.timely(at(0), &received(7, 0, 12));
        let mut sent = received(7, 0, 99);
        if let TimelyEvent::Messages(message) = &mut sent {
            message.is_send = true;
        }
        figures.timely(at(0), &sent);
        // The dataflow runs 10 ms, its arrangement 4 of them.
        for (ms, event) in [
            (0, ScheduleEvent::start(0)),
            (3, ScheduleEvent::start(2)),
            (7, ScheduleEvent::stop(2)),
            (10, ScheduleEvent::stop(0)),
        ] {
            figures.timely(at(ms), &TimelyEvent::Schedule(event));
        }
        #[cfg(feature = "differential")]
        {
            figures.arranged(2, 40);
            figures.arranged(2, -15);
        }
        // A hidden dataflow, logged after its operator.
        figures.timely(at(0), &operates(4, &[1, 1], "Input"));
        figures.timely(at(0), &operates(3, &[1], "Hidden"));
        let operators = figures.operators();
        let names: Vec<&str> = operators.iter().map(|op| op.name.as_str()).collect();
        assert_eq!(names, ["Source", "Arrange"]);
        let arrange = &operators[1];
        assert_eq!((arrange.records, arrange.exchanged), (42, true));
        assert_eq!(arrange.busy_ns, 4_000_000);
        assert_eq!(operators[0].feeds, ["Arrange"]);
        #[cfg(feature = "differential")]
        assert_eq!(arrange.arranged, Some((25, 40)));
    }

    #[test]
    fn only_the_last_finished_dataflows_are_kept() {
        let mut figures = Figures::hiding("Hidden");
        let built = KEPT_FINISHED + 8;
        for dataflow in 0..built {
            let (root, op) = (2 * dataflow, 2 * dataflow + 1);
            figures.timely(Duration::ZERO, &operates(op, &[dataflow, 1], "Map"));
            figures.timely(Duration::ZERO, &operates(root, &[dataflow], "Dataflow"));
            let shutdown = timely::logging::ShutdownEvent { id: root };
            figures.timely(Duration::ZERO, &TimelyEvent::Shutdown(shutdown));
        }
        let kept: Vec<usize> = figures.operators().iter().map(|op| op.address[0]).collect();
        assert_eq!(kept, (built - KEPT_FINISHED..built).collect::<Vec<_>>());
    }
}
