//! What one worker's logs say about each operator, summed as the events
//! come: the records its input channels delivered here, the time it was
//! scheduled here, and (for an arrangement) the records it holds here.
//! One entry per operator and channel, of the dataflows running and the
//! last [`KEPT_FINISHED`] finished, and per window of time (a [`Series`]):
//! bounded however long a program runs.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use timely::logging::{StartStop, TimelyEvent};

use super::series::Series;

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
    /// The names of the operators its outputs feed.
    pub(crate) feeds: Vec<String>,
    /// The names of the operators that feed its inputs.
    pub(crate) fed_by: Vec<String>,
}

/// A channel's records delivered to this worker, as exchanged for the
/// report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChannelFigures {
    /// The operator and output port it leaves (the scope's own address for
    /// a scope's input).
    pub(crate) source: (Vec<usize>, usize),
    /// The operator and input port it enters (the scope's own address for
    /// a scope's output).
    pub(crate) target: (Vec<usize>, usize),
    /// Records delivered here from each worker, by its index.
    pub(crate) from: Vec<u64>,
}

/// One window's figures on this worker, as exchanged for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WindowFigures {
    /// Its first period and the period after its last.
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Records delivered to each operator (by address) that received any.
    pub(crate) records: Vec<(Vec<usize>, u64)>,
    /// Nanoseconds each operator (by address) was scheduled, where it was.
    pub(crate) busy_ns: Vec<(Vec<usize>, u64)>,
}

/// Everything one worker's logs say, as exchanged for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WorkerFigures {
    /// The operators that are not scopes.
    pub(crate) operators: Vec<OperatorFigures>,
    /// The scopes (dataflows included), by address, with their names.
    pub(crate) scopes: Vec<(Vec<usize>, String)>,
    /// Every channel that delivered records here.
    pub(crate) channels: Vec<ChannelFigures>,
    /// The windows' length, in seconds.
    pub(crate) period_s: f64,
    /// The figures per window, the oldest first.
    pub(crate) windows: Vec<WindowFigures>,
}

/// A channel as logged on this worker: where it leaves and enters.
#[derive(Debug, Clone)]
struct Channel {
    source: (Vec<usize>, usize),
    target: (Vec<usize>, usize),
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
#[derive(Debug)]
pub(crate) struct Figures {
    /// By the operator's worker-unique id.
    operators: HashMap<usize, Operator>,
    /// Each channel's source and target.
    channels: HashMap<usize, Channel>,
    /// Records each channel delivered here, by the worker they came from.
    delivered: HashMap<usize, Vec<u64>>,
    /// The same, per window of time; and busy time per window.
    series: Series,
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
    /// Figures that leave out the dataflows named `hide`, with windows of
    /// `period`.
    pub(crate) fn hiding(hide: &'static str, period: Duration) -> Self {
        Figures {
            operators: HashMap::new(),
            channels: HashMap::new(),
            delivered: HashMap::new(),
            series: Series::new(period),
            running: Vec::new(),
            hidden: Vec::new(),
            hide,
            finished: VecDeque::new(),
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
                // Index 0 is the scope itself: its inputs and outputs.
                let at = |(index, port): (usize, usize)| {
                    let mut address = channel.scope_addr.clone();
                    if index > 0 {
                        address.push(index);
                    }
                    (address, port)
                };
                let logged = Channel {
                    source: at(channel.source),
                    target: at(channel.target),
                };
                self.channels.insert(channel.id, logged);
            }
            TimelyEvent::Messages(message) if !message.is_send && self.channels.contains_key(&message.channel) => {
                let records = message.record_count.max(0) as u64;
                let from = self.delivered.entry(message.channel).or_default();
                if from.len() <= message.source {
                    from.resize(message.source + 1, 0);
                }
                from[message.source] += records;
                self.series.records(time, message.channel, records);
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
        self.channels.retain(|channel, logged| {
            let keep = !logged.target.0.starts_with(root);
            if !keep {
                delivered.remove(channel);
            }
            keep
        });
        let (operators, channels) = (&self.operators, &self.channels);
        self.series.retain(
            |channel| channels.contains_key(&channel),
            |id| operators.contains_key(&id),
        );
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
                    let own = spent.saturating_sub(children);
                    operator.busy += own;
                    self.series.busy(time, id, own);
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

    /// The operator (and input port) channel `id` enters, if it is kept.
    pub(crate) fn target_of(&self, id: usize) -> Option<&(Vec<usize>, usize)> {
        self.channels.get(&id).map(|channel| &channel.target)
    }

    /// Whether the operator at `address` is among those kept.
    pub(crate) fn knows(&self, address: &[usize]) -> bool {
        self.operators.values().any(|op| op.address == address)
    }

    /// Everything this worker's logs said so far.
    pub(crate) fn worker_figures(&self) -> WorkerFigures {
        WorkerFigures {
            operators: self.operators(),
            scopes: self
                .scopes()
                .into_iter()
                .map(|op| (op.address.clone(), op.name.clone()))
                .collect(),
            channels: self
                .channels
                .iter()
                .filter_map(|(id, channel)| {
                    let from = self.delivered.get(id)?.clone();
                    Some(ChannelFigures {
                        source: channel.source.clone(),
                        target: channel.target.clone(),
                        from,
                    })
                })
                .collect(),
            period_s: self.series.period().as_secs_f64(),
            windows: self.windows(),
        }
    }

    /// The operators that others are inside.
    fn scopes(&self) -> Vec<&Operator> {
        let parents: HashSet<&[usize]> = self
            .operators
            .values()
            .filter_map(|op| op.address.split_last().map(|(_, parent)| parent))
            .collect();
        self.operators
            .values()
            .filter(|op| parents.contains(op.address.as_slice()))
            .collect()
    }

    /// The windows, with each channel's records charged to the operator
    /// it enters.
    fn windows(&self) -> Vec<WindowFigures> {
        let target = |channel: &usize| self.channels.get(channel).map(|c| c.target.0.clone());
        self.series
            .windows()
            .into_iter()
            .map(|(window, end)| {
                let mut records: HashMap<Vec<usize>, u64> = HashMap::new();
                for (channel, delivered) in &window.records {
                    if let Some(address) = target(channel) {
                        *records.entry(address).or_default() += delivered;
                    }
                }
                let busy_ns = window
                    .busy_ns
                    .iter()
                    .filter_map(|(id, busy)| Some((self.operators.get(id)?.address.clone(), *busy)))
                    .collect();
                WindowFigures {
                    start: window.start,
                    end,
                    records: records.into_iter().collect(),
                    busy_ns,
                }
            })
            .collect()
    }

    /// Every operator that is not a scope, with its figures, in address order.
    pub(crate) fn operators(&self) -> Vec<OperatorFigures> {
        let by_address: HashMap<&[usize], &Operator> =
            self.operators.values().map(|op| (op.address.as_slice(), op)).collect();
        let mut records: HashMap<&[usize], u64> = HashMap::new();
        let (mut feeds, mut fed_by): (Names, Names) = Default::default();
        for (channel, Channel { source, target }) in &self.channels {
            let (source, target) = (source.0.as_slice(), target.0.as_slice());
            let from = self.delivered.get(channel).map_or(&[][..], Vec::as_slice);
            *records.entry(target).or_default() += from.iter().sum::<u64>();
            if let Some(target) = by_address.get(target) {
                feeds.entry(source).or_default().push(target.name.clone());
            }
            if let Some(source) = by_address.get(source) {
                fed_by.entry(target).or_default().push(source.name.clone());
            }
        }
        let scopes: HashSet<&[usize]> = self.scopes().iter().map(|op| op.address.as_slice()).collect();
        let mut operators: Vec<OperatorFigures> = self
            .operators
            .values()
            .filter(|op| !scopes.contains(op.address.as_slice()))
            .map(|op| OperatorFigures {
                address: op.address.clone(),
                name: op.name.clone(),
                records: records.get(op.address.as_slice()).copied().unwrap_or_default(),
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
        let mut figures = Figures::hiding("Hidden", Duration::from_secs(1));
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
        assert_eq!(arrange.records, 42);
        let channel = &figures.worker_figures().channels[0];
        assert_eq!(
            (&channel.source, &channel.target, &channel.from),
            (&(vec![0, 1], 0), &(vec![0, 2], 0), &vec![12, 30])
        );
        assert_eq!(arrange.busy_ns, 4_000_000);
        assert_eq!(operators[0].feeds, ["Arrange"]);
        #[cfg(feature = "differential")]
        assert_eq!(arrange.arranged, Some((25, 40)));
    }

    #[test]
    fn only_the_last_finished_dataflows_are_kept() {
        let mut figures = Figures::hiding("Hidden", Duration::from_secs(1));
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
