//! SWARM as a timely dataflow: routers, the SWARM pact, executors, the
//! feedback to the coordinator, and state migration (the timestamped
//! protocol of `../shared/design/SWARM.md`, "In timely").
//!
//! - The **router** on each worker holds the records of epoch `t` until the
//!   plan for `t` is final (the plan stream has passed `t`), then tags each
//!   record with its partition (a query once per overlapping partition,
//!   Algorithm 1) and hands it to the [`SwarmPact`].
//! - The **executor** on each worker processes epoch `t` once its data, plan
//!   and state inputs have all passed `t`: arrived partitions first, then
//!   queries and removals, then points. Every `round` epochs it ends the
//!   round, reports (Num(C(m)), R(m)) to the coordinator and applies the plan
//!   update that takes effect at the next epoch: it splits and merges the
//!   partitions it holds and sends away those it no longer owns, at the
//!   round's last epoch, over a feedback edge of one epoch, so they are
//!   installed at their new owner before any record of the next epoch.
//! - The **coordinator** (worker 0) decides at each round end, asks the
//!   loaded workers for reductions (each answers from its own statistics),
//!   concludes the update and broadcasts it over a feedback edge of one
//!   round: an update decided at the end of round `r` takes effect at the
//!   start of round `r + 2`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::{Operator, OutputBuilder};
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{ConnectLoop, Exchange as ExchangeRecords, Feedback, Probe};
use timely::dataflow::{ProbeHandle, StreamVec};
use timely::progress::Antichain;

use crate::common::hash::splitmix64;
use crate::common::spin::BusyWork;
use crate::common::stash::TimeStash;

use super::app::PartitionState;
use super::coordinator::{Coordinator, Orders, Policy, ReductionAsk, RoundReport};
use super::cost::RangeQueryCost;
use super::geometry::{Grid, OutOfBounds};
use super::ids::{IdMint, PartitionId};
use super::index::{GlobalIndex, PlanChange};
use super::input::Record;
use super::pact::SwarmPact;
use super::plan::{PlanHistory, PlanUpdate};
use super::store::{PartitionPacket, Store};

/// Settings of a SWARM dataflow.
#[derive(Debug, Clone)]
pub struct SwarmConfig {
    /// The space and its cells.
    pub grid: Grid,
    /// Epochs per load-balancing round.
    pub round: u64,
    /// Merge each worker's adjacent partitions every this many rounds.
    pub merge_every: u64,
    /// Busy work per point–query check.
    pub work_per_check: BusyWork,
}

/// What one executor did, readable by the program.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutorFigures {
    /// Point–query checks made.
    pub checks: u64,
    /// Wall-clock nanoseconds spent evaluating points.
    pub busy_ns: u64,
    /// (query, point) matches found.
    pub matches: u64,
    /// Wrapping sum over matches of splitmix64(query id XOR splitmix64(point id)).
    pub digest: u64,
    /// Partitions sent to other workers.
    pub partitions_moved: u64,
    /// Bytes of state sent to other workers.
    pub bytes_moved: u64,
    /// Partitions held now.
    pub partitions_held: u64,
}

/// One term of the matches digest.
pub fn match_digest(query: u64, point: u64) -> u64 {
    splitmix64(query ^ splitmix64(point))
}

/// The handles a program keeps on a SWARM dataflow.
pub struct SwarmHandles {
    /// Passes epoch `t` once every executor has processed it.
    pub probe: ProbeHandle<u64>,
    /// This worker's executor figures.
    pub figures: Rc<RefCell<ExecutorFigures>>,
    /// What the coordinator ordered (meaningful on worker 0).
    pub orders: Rc<RefCell<Orders>>,
}

type Packets<S> = Vec<(usize, PartitionPacket<S>)>;

/// Builds SWARM over the stream of validated `records`, with application
/// state `S` per partition and the plan evolving by `policy` (used on worker
/// 0 only; every worker must pass one).
pub fn swarm<'scope, S: PartitionState + Send>(
    records: StreamVec<'scope, u64, Record>,
    config: &SwarmConfig,
    policy: Policy,
) -> SwarmHandles {
    let scope = records.scope();
    let (me, workers) = (scope.index(), scope.peers());
    let round = config.round.max(1);
    let (initial, base) = GlobalIndex::initial(config.grid.clone(), workers).expect("at least one worker");
    // Workers mint from `workers + 1` disjoint sequences, the coordinator from the last.
    let store = Rc::new(RefCell::new(Store::<S>::new(
        me,
        initial.clone(),
        IdMint::new(base, me, workers + 1),
    )));
    let history = Rc::new(RefCell::new(PlanHistory::new(initial.clone())));
    let coordinator = Rc::new(RefCell::new(Coordinator::new(
        policy,
        initial,
        IdMint::new(base, workers, workers + 1),
        workers,
        round,
    )));
    let figures = Rc::new(RefCell::new(ExecutorFigures::default()));
    let orders = Rc::new(RefCell::new(Orders::default()));

    let (plan_handle, plan_stream) = scope.feedback::<Vec<PlanUpdate>>(round);
    let (state_handle, state_stream) = scope.feedback::<Packets<S>>(1);

    let routed = router(records, plan_stream.clone(), Rc::clone(&history), config.grid.clone());

    // The executor.
    let mut builder = OperatorBuilder::new("SwarmExecutor".to_owned(), scope);
    let mut data_in = builder.new_input(routed, SwarmPact::new(Rc::clone(&history)));
    let mut plan_in = builder.new_input(plan_stream.clone(), Pipeline);
    let mut state_in = builder.new_input(
        state_stream,
        Exchange::new(|(to, _): &(usize, PartitionPacket<S>)| *to as u64),
    );
    let (reports_out, reports) = builder.new_output::<Vec<RoundReport>>();
    let (packets_out, packets) = builder.new_output::<Packets<S>>();
    let mut reports_out = OutputBuilder::<_, CapacityContainerBuilder<Vec<RoundReport>>>::from(reports_out);
    let mut packets_out = OutputBuilder::<_, CapacityContainerBuilder<Packets<S>>>::from(packets_out);
    let executor_store = Rc::clone(&store);
    let executor_figures = Rc::clone(&figures);
    let (merge_every, work) = (config.merge_every.max(1), config.work_per_check);
    builder.build(move |mut caps| {
        // One capability per output, each held at the next round end.
        let mut packet_cap = caps.pop();
        let mut round_cap = caps.pop();
        for cap in round_cap.iter_mut().chain(packet_cap.iter_mut()) {
            cap.downgrade(&(round - 1));
        }
        let mut data: TimeStash<u64, Vec<(PartitionId, Record)>> = TimeStash::default();
        let mut arrivals: BTreeMap<u64, Vec<PartitionPacket<S>>> = BTreeMap::new();
        let mut updates: BTreeMap<u64, PlanUpdate> = BTreeMap::new();
        let model = RangeQueryCost::default();
        move |frontiers| {
            let (data_frontier, plan_frontier, state_frontier) = (&frontiers[0], &frontiers[1], &frontiers[2]);
            data_in.for_each_stamp(|cap, batches| {
                if let Some(held) = data.at(&cap) {
                    for batch in batches {
                        held.append(batch);
                    }
                }
            });
            plan_in.for_each_stamp(|_, batches| {
                for update in batches.flat_map(|batch| batch.drain(..)) {
                    updates.insert(update.effective, update);
                }
            });
            state_in.for_each_stamp(|cap, batches| {
                let Some(&time) = cap.least() else { return };
                arrivals
                    .entry(time)
                    .or_default()
                    .extend(batches.flat_map(|batch| batch.drain(..)).map(|(_, p)| p));
            });
            let mut reports_session = reports_out.activate();
            let mut packets_session = packets_out.activate();
            let mut store = executor_store.borrow_mut();
            let mut figures = executor_figures.borrow_mut();
            loop {
                let round_end = round_cap.as_ref().map(|cap| *cap.time());
                if data_frontier.is_empty() && data.first_time().is_none() && arrivals.is_empty() {
                    // No more records: nothing left to balance.
                    round_cap = None;
                    packet_cap = None;
                    break;
                }
                let next = [data.first_time().copied(), arrivals.keys().next().copied(), round_end]
                    .into_iter()
                    .flatten()
                    .min();
                let Some(time) = next else { break };
                let complete = !data_frontier.less_equal(&time)
                    && !plan_frontier.less_equal(&time)
                    && !state_frontier.less_equal(&time);
                if !complete {
                    break;
                }
                let current_round = time / round;
                for packet in arrivals.remove(&time).into_iter().flatten() {
                    store.install(packet);
                }
                let mut records = Vec::new();
                data.drain_while(|held| *held == time, |_, held| records = held);
                if !records.is_empty() {
                    // Registrations, then removals, then points: records of one
                    // epoch arrive from many workers in no particular order.
                    for (partition, record) in records.iter().filter(|(_, r)| matches!(r, Record::Query(_))) {
                        store.apply_record(*partition, record, current_round, &mut |_, _| {});
                    }
                    for (partition, record) in records.iter().filter(|(_, r)| matches!(r, Record::Removal(_))) {
                        store.apply_record(*partition, record, current_round, &mut |_, _| {});
                    }
                    let start = Instant::now();
                    let (mut matches, mut digest) = (0u64, 0u64);
                    for (partition, record) in records.iter().filter(|(_, r)| matches!(r, Record::Point(_))) {
                        let checks = store.apply_record(*partition, record, current_round, &mut |query, point| {
                            matches += 1;
                            digest = digest.wrapping_add(match_digest(query, point));
                        });
                        work.repeat(checks);
                        figures.checks += checks;
                    }
                    figures.matches += matches;
                    figures.digest = figures.digest.wrapping_add(digest);
                    figures.busy_ns += start.elapsed().as_nanos() as u64;
                }
                if Some(time) == round_end {
                    let load = store.end_round(&model);
                    let merges = if (current_round + 1).is_multiple_of(merge_every) {
                        store.plan_merges()
                    } else {
                        Vec::new()
                    };
                    let cap = round_cap.as_mut().expect("held until the input ends");
                    reports_session.session(&*cap).give(RoundReport {
                        worker: me,
                        load,
                        merges,
                    });
                    if let Some(update) = updates.remove(&(time + 1)) {
                        let leaving = store.apply_update(&update, current_round).unwrap_or_else(|error| {
                            panic!(
                                "worker {me} cannot apply the plan update for epoch {}: {error}",
                                time + 1
                            )
                        });
                        for (_, packet) in &leaving {
                            figures.partitions_moved += 1;
                            figures.bytes_moved += (packet.partition.state.moved_bytes()
                                + std::mem::size_of_val(packet.partition.stats.rows())
                                + std::mem::size_of_val(packet.partition.stats.cols()))
                                as u64;
                        }
                        packets_session
                            .session(packet_cap.as_ref().expect("held with the round capability"))
                            .give_iterator(leaving.into_iter());
                    }
                    cap.downgrade(&(time + round));
                    if let Some(cap) = packet_cap.as_mut() {
                        cap.downgrade(&(time + round));
                    }
                }
            }
            figures.partitions_held = store.partitions().len() as u64;
        }
    });
    packets.connect_loop(state_handle);

    // The coordinator: decide at worker 0 ...
    let decide_coordinator = Rc::clone(&coordinator);
    let decisions = reports
        .clone()
        .unary_frontier::<CapacityContainerBuilder<Vec<Coordination>>, _, _, _>(
            Exchange::new(|_: &RoundReport| 0),
            "SwarmDecide",
            move |_, _| {
                let mut stash: TimeStash<u64, Vec<RoundReport>> = TimeStash::default();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        if let Some(reports) = stash.at(&cap) {
                            reports.extend(batches.flat_map(|batch| batch.drain(..)));
                        }
                    });
                    stash.drain_complete(frontier, |cap, reports| {
                        let asks = decide_coordinator.borrow_mut().round_end(reports);
                        let mut session = output.session(&cap);
                        session.give_iterator(asks.into_iter().map(|(worker, ask)| Coordination::Ask(worker, ask)));
                        session.give(Coordination::Conclude);
                    });
                }
            },
        );
    // ... each asked worker answers from its own statistics ...
    let reducer_store = Rc::clone(&store);
    let proposals = decisions
        .clone()
        .flat_map(|message| match message {
            Coordination::Ask(worker, ask) => Some((worker, ask)),
            Coordination::Conclude => None,
        })
        .unary::<CapacityContainerBuilder<Vec<(usize, Vec<PlanChange>)>>, _, _, _>(
            Exchange::new(|(worker, _): &(usize, ReductionAsk)| *worker as u64),
            "SwarmReduce",
            move |_, _| {
                move |input, output| {
                    input.for_each_stamp(|cap, batches| {
                        let mut session = output.session(&cap);
                        for (_, ask) in batches.flat_map(|batch| batch.drain(..)) {
                            let changes = reducer_store.borrow_mut().propose_reduction(
                                &RangeQueryCost::default(),
                                &ask.request,
                                ask.low_worker,
                            );
                            session.give((ask.rank, changes));
                        }
                    });
                }
            },
        );
    // ... and the coordinator concludes and broadcasts the update.
    let conclude_orders = Rc::clone(&orders);
    decisions
        .flat_map(|message| matches!(message, Coordination::Conclude).then_some(()))
        .binary_frontier::<_, CapacityContainerBuilder<Vec<(usize, PlanUpdate)>>, _, _, _, _>(
            proposals,
            Pipeline,
            Exchange::new(|_: &(usize, Vec<PlanChange>)| 0),
            "SwarmConclude",
            move |_, _| {
                let mut marks: TimeStash<u64, ()> = TimeStash::default();
                let mut answers: BTreeMap<u64, Vec<(usize, Vec<PlanChange>)>> = BTreeMap::new();
                move |(marks_in, marks_frontier), (answers_in, answers_frontier), output| {
                    marks_in.for_each_stamp(|cap, _| {
                        marks.at(&cap);
                    });
                    answers_in.for_each_stamp(|cap, batches| {
                        if let Some(&time) = cap.least() {
                            answers
                                .entry(time)
                                .or_default()
                                .extend(batches.flat_map(|batch| batch.drain(..)));
                        }
                    });
                    let complete = |time: &u64| !marks_frontier.less_equal(time) && !answers_frontier.less_equal(time);
                    marks.drain_while(complete, |cap, ()| {
                        let mut coordinator = coordinator.borrow_mut();
                        let update = coordinator.conclude(*cap.time(), answers.remove(cap.time()).unwrap_or_default());
                        *conclude_orders.borrow_mut() = coordinator.orders().clone();
                        output
                            .session(&cap)
                            .give_iterator((0..workers).map(|worker| (worker, update.clone())));
                    });
                }
            },
        )
        .exchange(|(worker, _): &(usize, PlanUpdate)| *worker as u64)
        .map(|(_, update)| update)
        .connect_loop(plan_handle);
    SwarmHandles {
        probe: reports.probe().0,
        figures,
        orders,
    }
}

/// What the deciding coordinator sends on.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Coordination {
    /// Ask this worker for a reduction.
    Ask(usize, ReductionAsk),
    /// Conclude the round (always sent, so the update has a capability).
    Conclude,
}

/// The router: holds each epoch's records until the plan for it is final,
/// then tags them with their partitions under that plan.
fn router<'scope>(
    records: StreamVec<'scope, u64, Record>,
    plan: StreamVec<'scope, u64, PlanUpdate>,
    history: Rc<RefCell<PlanHistory>>,
    grid: Grid,
) -> StreamVec<'scope, u64, (PartitionId, Record)> {
    let mut builder = OperatorBuilder::new("SwarmRouter".to_owned(), records.scope());
    let mut records_in = builder.new_input(records, Pipeline);
    // Plan updates never cause output at their own time: no connection, so
    // the router's output frontier follows its records alone.
    let mut plan_in = builder.new_input(plan, Pipeline);
    let (routed_out, routed) =
        builder.new_output_connection::<Vec<(PartitionId, Record)>, _>([(0, Antichain::from_elem(0))]);
    let mut routed_out = OutputBuilder::<_, CapacityContainerBuilder<Vec<(PartitionId, Record)>>>::from(routed_out);
    builder.build(move |_caps| {
        let mut stash: TimeStash<u64, Vec<Record>> = TimeStash::default();
        move |frontiers| {
            let (records_frontier, plan_frontier) = (&frontiers[0], &frontiers[1]);
            records_in.for_each_stamp(|cap, batches| {
                if let Some(held) = stash.at(&cap) {
                    for batch in batches {
                        held.append(batch);
                    }
                }
            });
            plan_in.for_each_stamp(|_, batches| {
                let mut history = history.borrow_mut();
                for update in batches.flat_map(|batch| batch.drain(..)) {
                    history
                        .install(&update)
                        .expect("the coordinator sends only updates that apply");
                }
            });
            let mut output = routed_out.activate();
            stash.drain_complete(plan_frontier, |cap, held| {
                let history = history.borrow();
                let plan = history.at(*cap.time());
                let mut session = output.session(&cap);
                for record in held {
                    route(plan, &grid, record, &mut |partition, record| {
                        session.give((partition, record))
                    });
                }
            });
            // Versions older than every record still to come or held are done.
            if let Some(&oldest) = records_frontier.frontier().first() {
                let held = stash.first_time().copied().unwrap_or(oldest);
                history.borrow_mut().forget_before(oldest.min(held));
            }
        }
    });
    routed
}

/// Tags `record` with its partitions under `plan`: a point with its one
/// partition, a query or removal with every partition it overlaps.
fn route(plan: &GlobalIndex, grid: &Grid, record: Record, give: &mut dyn FnMut(PartitionId, Record)) {
    match record {
        Record::Point(point) => {
            let (partition, _) = plan
                .route_point(point.x, point.y, OutOfBounds::Clamp)
                .expect("points are validated on input");
            give(partition, record);
        }
        Record::Query(query) | Record::Removal(query) => {
            let cells = grid
                .cells_of(&query.rect, OutOfBounds::Clamp)
                .expect("queries are validated on input");
            for partition in plan.partitions_overlapping(&cells) {
                give(partition, record);
            }
        }
    }
}
