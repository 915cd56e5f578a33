//! SWARM as a timely operator: records in, the application's results out,
//! with the plan balanced by the coordinator as the load moves.
//!
//! The stages, each on every worker (the timestamped protocol of
//! `bench/results/swarm.md`, "How SWARM works in timely, in detail"):
//! - the **dispatcher** holds the records of epoch `t` until the plan for `t`
//!   is final, then tags each with its partitions;
//! - an exchange by holder delivers each tagged record to the worker the
//!   dispatcher chose: its partition's owner under the plan valid at `t`,
//!   or a holder of a shared partition;
//! - the **executor** processes epoch `t` once its data, plan and state
//!   inputs have all passed `t` (arrived partitions, then registrations,
//!   removals, points), emitting the points' results at `t`. Every `round`
//!   epochs it reports (Num(C(m)), R(m)) to the coordinator and applies the
//!   plan update that holds from the next epoch: it splits and merges what it
//!   holds and sends away what it no longer owns, at the round's last epoch,
//!   over a feedback edge of one epoch, so each partition is installed at its
//!   new owner before any record of the next epoch;
//! - the **coordinator** stage turns reports into plan updates over a
//!   feedback edge of `plan_depth` rounds: an update concluded at the end
//!   of round `r` holds from the start of round `r + 1 + plan_depth`, and
//!   the records of the rounds before it may be routed, exchanged and
//!   processed while the coordinator decides.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use timely::communication::Pull;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::channels::Message;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::operator::empty;
use timely::dataflow::operators::generic::{InputHandleCore, OutputBuilder, OutputBuilderSession};
use timely::dataflow::operators::{ConnectLoop, Feedback, Probe};
use timely::dataflow::{ProbeHandle, StreamVec};
use timely::progress::frontier::MutableAntichain;
use timely::ExchangeData;

use crate::common::busy_work::BusyWork;
use crate::common::stash::TimeStash;
use crate::common::Error;

use super::app::PartitionState;
use super::census::open;
use super::control::{control as control_plan, Controller};
use super::coordination::coordinate;
use super::coordinator::{Coordinator, Orders, Policy, RoundReport};
use super::cost::{CostModel, RangeQueryCost};
use super::dispatch::{dispatch, DispatchedTo, Refused};
use super::events::{SwarmEventBuilder, LOG_NAME};
use super::executor::{Executor, ExecutorFigures};
use super::geometry::{Grid, OutOfBounds};
use super::ids::{IdMint, PartitionId};
use super::index::{GlobalIndex, PlanChange};
use super::plan_history::PlanUpdate;
use super::record::Record;
use super::store::{PartitionPacket, Store};

/// The longest round, in epochs, and the deepest plan, in rounds (epoch
/// arithmetic stays far from overflow).
const MAX_ROUND: u64 = 1 << 32;
const MAX_PLAN_DEPTH: u64 = 1 << 16;

/// From this many workers the default round is 1 epoch, below it 2. With
/// more workers each holds a smaller share of a moving hotspot, and the
/// plan's lag (two rounds) becomes the imbalance: at 16–64 workers rounds
/// of 2 left the busiest worker at up to 1.10–1.16× the mean, rounds of 1
/// at 1.03–1.07. Below 16 workers rounds of 2 balance as well (1.00–1.06)
/// and cost half the coordination.
const SHORT_ROUNDS_FROM: usize = 16;

/// The plan SWARM starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitialPlan {
    /// Fine: one cell per partition, or
    /// [`FINE_PER_WORKER`](super::plan::FINE_PER_WORKER) blocks per worker on a
    /// grid of more cells, dealt along diagonals so that neighbours belong
    /// to different workers (see [`GlobalIndex::fine`]): the first epochs are as
    /// balanced as that plan, whatever the load, and SWARM moves, shares
    /// and merges from there.
    #[default]
    Fine,
    /// One partition per worker, by halving the largest partition: SWARM
    /// then cuts and moves for several rounds before it balances.
    OnePerWorker,
    /// `k` cell-aligned blocks per worker, dealt along diagonals so that
    /// neighbouring blocks belong to different workers (see
    /// [`GlobalIndex::blocks`]).
    Blocks(usize),
}

impl InitialPlan {
    /// This plan over `grid` for `workers`, and the first id it left unused.
    fn lay_out(self, grid: &Grid, workers: usize) -> Result<(GlobalIndex, PartitionId), Error> {
        match self {
            InitialPlan::Fine => GlobalIndex::fine(grid.clone(), workers),
            InitialPlan::OnePerWorker => GlobalIndex::initial(grid.clone(), workers),
            InitialPlan::Blocks(k) => GlobalIndex::blocks(grid.clone(), workers, k),
        }
    }
}

/// Settings of a SWARM operator.
#[derive(Debug, Clone)]
pub struct SwarmConfig<M = RangeQueryCost> {
    /// The space and its cells.
    pub grid: Grid,
    /// What [`Record::point`] and [`Record::query`] do with coordinates
    /// outside the space.
    pub outside: OutOfBounds,
    /// The plan at epoch 0.
    pub initial: InitialPlan,
    /// Epochs per load-balancing round (at least 1); `None` (the default)
    /// chooses by the number of workers (see [`SwarmConfig::round_for`]).
    pub round: Option<u64>,
    /// Rounds ahead that the coordinator concludes a plan update (at least
    /// 1): an update concluded at the end of round `r` holds from the start
    /// of round `r + 1 + plan_depth`. The records of those rounds run on
    /// while the coordinator's messages travel, so the depth bounds how far
    /// the dataflow pipelines epochs; each further round of depth is a
    /// round more before the plan follows the load. 1 (the default) suits
    /// one process; across processes, choose it from the round trip to the
    /// coordinator (`bench/results/swarm.md`, "Epochs and plan depth across processes").
    pub plan_depth: u64,
    /// Merge each worker's adjacent partitions every this many rounds (at least 1).
    pub merge_every: u64,
    /// Choosing the granularity (ours), for a cost model under which splits
    /// cut work: with `Some(gain)`, each worker also splits a partition in
    /// place when a split cuts its work by at least `gain` (a share), and
    /// merges neighbours whose union adds little work. `None` is the paper's
    /// behaviour: splits only to move load, and every mergeable pair merged
    /// every `merge_every` rounds. Under the default, measured cost no split
    /// cuts work and no merge adds any, so both behave as `None`.
    pub split_gain: Option<f64>,
    /// Whether SWARM plans epoch 0 from its own records (the opening): each
    /// worker counts its records of epoch 0 by cell, and the coordinator
    /// shares each cell that carries more than a worker's mean work and
    /// moves partitions off the workers still loaded beyond 1.1× the mean
    /// ([`plan_opening`](super::plan::plan_opening)). Epoch 0 then waits for
    /// that plan: one round trip, once. The default; without it the first
    /// `round · (plan_depth + 1)` epochs run on the initial plan whatever
    /// their load. Only [`Policy::Adaptive`] opens.
    pub opening: bool,
    /// The cost model the executors, the reductions and so the coordinator use.
    pub cost: M,
    /// Busy work per point–query check: an experiment's stand-in for the
    /// cost of a check (zero by default).
    #[doc(hidden)]
    pub work_per_check: BusyWork,
}

impl SwarmConfig {
    /// Defaults over `grid`: points outside rejected, the fine start
    /// ([`InitialPlan::Fine`]), rounds chosen by the number of workers
    /// ([`SwarmConfig::round_for`]), merges every 10 rounds, the
    /// range-query cost model.
    pub fn new(grid: Grid) -> Self {
        SwarmConfig {
            grid,
            outside: OutOfBounds::Reject,
            initial: InitialPlan::Fine,
            round: None,
            plan_depth: 1,
            merge_every: 10,
            split_gain: Some(0.2),
            opening: true,
            cost: RangeQueryCost::default(),
            work_per_check: BusyWork::default(),
        }
    }
}

impl<M> SwarmConfig<M> {
    /// The same settings with another cost model.
    pub fn with_cost<N: CostModel + Clone + 'static>(self, cost: N) -> SwarmConfig<N> {
        SwarmConfig {
            grid: self.grid,
            outside: self.outside,
            initial: self.initial,
            round: self.round,
            plan_depth: self.plan_depth,
            merge_every: self.merge_every,
            split_gain: self.split_gain,
            opening: self.opening,
            cost,
            work_per_check: self.work_per_check,
        }
    }

    /// A point of this space (see [`Record::point`]).
    pub fn point<P, Q>(&self, point: super::app::Point<P>) -> Result<Record<P, Q>, Error> {
        Record::point(&self.grid, self.outside, point)
    }

    /// A query of this space (see [`Record::query`]).
    pub fn query<P, Q>(&self, query: super::app::Query<Q>) -> Result<Record<P, Q>, Error> {
        Record::query(&self.grid, self.outside, query)
    }

    /// Epochs per round at `workers` workers: the `round` set, or by
    /// default 2 epochs, and 1 from 16 workers, where a moving hotspot
    /// outruns a plan two rounds of 2 epochs behind it.
    ///
    /// ```
    /// use equipoise::swarm::{Grid, Rect, SwarmConfig};
    ///
    /// let grid = Grid::new(Rect::new(0.0, 0.0, 1.0, 1.0).unwrap(), 8, 8).unwrap();
    /// let config = SwarmConfig::new(grid);
    /// assert_eq!((config.round_for(4), config.round_for(16)), (2, 1));
    /// let config = SwarmConfig { round: Some(4), ..config };
    /// assert_eq!(config.round_for(64), 4);
    /// ```
    pub fn round_for(&self, workers: usize) -> u64 {
        self.round.unwrap_or(if workers >= SHORT_ROUNDS_FROM { 1 } else { 2 })
    }

    /// The plan SWARM starts from at `workers` workers, and a mint of
    /// partition ids no worker uses: what a program that orders changes on
    /// a control stream ([`Swarm::swarm_controlled`]) plans from. Apply
    /// each change it orders to its copy, as SWARM does.
    pub fn initial_plan(&self, workers: usize) -> Result<(GlobalIndex, IdMint), Error> {
        let (index, base) = self.initial.lay_out(&self.grid, workers)?;
        Ok((index, IdMint::new(base, workers, workers + 1)))
    }

    /// Checks the settings `swarm` would refuse (it calls this too): a
    /// round of 0 or more than 2^32 epochs, a plan depth of 0 or more than
    /// 2^16 rounds, a merge interval of 0, a split gain that is not a share > 0.
    pub fn validate(&self) -> Result<(), Error> {
        if self.round == Some(0) {
            return Err(Error::invalid("SWARM round", "0 epochs: must be at least 1"));
        }
        if !(1..=MAX_PLAN_DEPTH).contains(&self.plan_depth) {
            return Err(Error::invalid(
                "SWARM plan_depth",
                format!("{} rounds: must be from 1 to {MAX_PLAN_DEPTH}", self.plan_depth),
            ));
        }
        if self.merge_every == 0 {
            return Err(Error::invalid("SWARM merge_every", "0 rounds: must be at least 1"));
        }
        if let Some(round) = self.round.filter(|&round| round > MAX_ROUND) {
            return Err(Error::invalid(
                "SWARM round",
                format!("{round} epochs: must be at most {MAX_ROUND}"),
            ));
        }
        if let Some(gain) = self.split_gain.filter(|gain| !(gain.is_finite() && *gain > 0.0)) {
            return Err(Error::invalid(
                "SWARM split_gain",
                format!("{gain}: must be a share > 0"),
            ));
        }
        Ok(())
    }
}

/// The handles a program keeps on a SWARM operator: its probe, and
/// snapshots of what it did on this worker.
pub struct SwarmHandles {
    probe: ProbeHandle<u64>,
    figures: Rc<RefCell<ExecutorFigures>>,
    refused: Rc<RefCell<Refused>>,
    orders: Rc<RefCell<Orders>>,
}

impl SwarmHandles {
    /// Passes epoch `t` once every executor has processed it (and emitted
    /// its results).
    pub fn probe(&self) -> &ProbeHandle<u64> {
        &self.probe
    }

    /// What this worker's executor did so far.
    pub fn figures(&self) -> ExecutorFigures {
        self.figures.borrow().clone()
    }

    /// What this worker's dispatcher refused so far.
    pub fn refused(&self) -> Refused {
        *self.refused.borrow()
    }

    /// What the coordinator ordered so far (on worker 0; empty elsewhere).
    pub fn orders(&self) -> Orders {
        self.orders.borrow().clone()
    }
}

/// SWARM on a stream of records.
pub trait Swarm<'scope, P, Q> {
    /// Runs application `S` over these records, partitioned over the
    /// workers by `config` and rebalanced by `policy` (every worker passes
    /// one; worker 0's decides). Returns the application's results, each at
    /// the epoch of the point that produced it, and the handles.
    ///
    /// An error if the configuration cannot be used (see
    /// [`SwarmConfig::validate`], [`Policy::validate`], and blocks that
    /// cannot be laid out on the grid).
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use timely::dataflow::operators::{Input, Inspect};
    /// use equipoise::swarm::{Grid, Match, Point, Policy, Query, RangeQueries, Rect, Record, Swarm, SwarmConfig};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = Arc::clone(&seen);
    /// timely::execute(timely::Config::process(2), move |worker| {
    ///     let grid = Grid::new(Rect::new(-180.0, -90.0, 180.0, 90.0).unwrap(), 32, 16).unwrap();
    ///     let config = SwarmConfig::new(grid);
    ///     let mut input = timely::dataflow::InputHandle::new();
    ///     let sink = Arc::clone(&sink);
    ///     worker.dataflow::<u64, _, _>(|scope| {
    ///         let (matches, _handles) = scope
    ///             .input_from(&mut input)
    ///             .swarm::<RangeQueries>(&config, Policy::threshold(1.2))
    ///             .unwrap();
    ///         // Each match appears at the worker that owns the point's partition.
    ///         matches.inspect(move |m: &Match| sink.lock().unwrap().push((m.query, m.point)));
    ///     });
    ///     if worker.index() == 0 {
    ///         let europe = Rect::new(-10.0, 35.0, 30.0, 60.0).unwrap();
    ///         input.send(config.query(Query::new(1, europe)).unwrap());
    ///         input.advance_to(1);
    ///         input.send(config.point(Point::new(7, 2.35, 48.85)).unwrap()); // Paris
    ///         input.send(config.point(Point::new(8, -74.0, 40.7)).unwrap()); // New York
    ///         // Within an epoch removals come before points: remove it later.
    ///         input.advance_to(2);
    ///         input.send(Record::removal(1));
    ///         input.send(config.point(Point::new(9, 13.4, 52.5)).unwrap()); // Berlin, too late
    ///     }
    /// })
    /// .unwrap();
    /// assert_eq!(*seen.lock().unwrap(), vec![(1, 7)]);
    /// ```
    #[allow(clippy::type_complexity)]
    fn swarm<S: PartitionState<Point = P, Query = Q>>(
        self,
        config: &SwarmConfig<impl CostModel + Clone + 'static>,
        policy: Policy,
    ) -> Result<(StreamVec<'scope, u64, S::Output>, SwarmHandles), Error>;

    /// Runs application `S` over these records on the plan that `control`
    /// orders, in place of SWARM's coordinator (Megaphone's control
    /// stream): a change ordered at time `t` holds from the start of the
    /// next round (`round_for` epochs each), and the state it moves
    /// migrates at the round's end, with nothing lost or duplicated. The
    /// records of an epoch wait until `control` has passed it, so advance
    /// it with the records. Changes apply in order to the plan that
    /// [`SwarmConfig::initial_plan`] gives; one touching a partition an
    /// earlier change of the same round touched waits for the next round,
    /// and one that does not apply (a partition that no longer exists, a
    /// worker beyond the last) is skipped and counted in
    /// [`Orders::refused`](super::figures::Orders::refused). The
    /// executors make no changes of their own.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use timely::dataflow::operators::{Input, Inspect};
    /// use equipoise::swarm::plan::PlanChange;
    /// use equipoise::swarm::{Grid, Match, Point, Query, RangeQueries, Rect, Swarm, SwarmConfig};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = Arc::clone(&seen);
    /// timely::execute(timely::Config::process(2), move |worker| {
    ///     let grid = Grid::new(Rect::new(0.0, 0.0, 4.0, 4.0).unwrap(), 4, 4).unwrap();
    ///     let config = SwarmConfig::new(grid);
    ///     let (plan, _ids) = config.initial_plan(worker.peers()).unwrap();
    ///     let (mut records, mut control) = (timely::dataflow::InputHandle::new(), timely::dataflow::InputHandle::new());
    ///     let sink = Arc::clone(&sink);
    ///     let me = worker.index();
    ///     worker.dataflow::<u64, _, _>(|scope| {
    ///         let (matches, _handles) = scope
    ///             .input_from(&mut records)
    ///             .swarm_controlled::<RangeQueries>(&config, scope.input_from(&mut control))
    ///             .unwrap();
    ///         matches.inspect(move |m: &Match| sink.lock().unwrap().push((m.query, m.point, me)));
    ///     });
    ///     // The partition holding (0.5, 0.5), and the other worker.
    ///     let (id, owner) = plan.route_point(0.5, 0.5, equipoise::swarm::OutOfBounds::Reject).unwrap();
    ///     if me == 0 {
    ///         records.send(config.query(Query::new(1, Rect::new(0.0, 0.0, 1.0, 1.0).unwrap())).unwrap());
    ///         records.send(config.point(Point::new(7, 0.5, 0.5)).unwrap());
    ///         // Ordered at epoch 0, the move holds from the next round (epoch 2).
    ///         control.send(PlanChange::Move { id, to: 1 - owner });
    ///     }
    ///     records.advance_to(2);
    ///     control.advance_to(2);
    ///     if me == 0 {
    ///         records.send(config.point(Point::new(8, 0.5, 0.5)).unwrap());
    ///     }
    /// })
    /// .unwrap();
    /// let mut seen = seen.lock().unwrap().clone();
    /// seen.sort();
    /// // The query moved with its partition: point 8 matched at the new owner.
    /// assert_eq!(seen.len(), 2);
    /// assert_ne!(seen[0].2, seen[1].2);
    /// ```
    #[allow(clippy::type_complexity)]
    fn swarm_controlled<S: PartitionState<Point = P, Query = Q>>(
        self,
        config: &SwarmConfig<impl CostModel + Clone + 'static>,
        control: StreamVec<'scope, u64, PlanChange>,
    ) -> Result<(StreamVec<'scope, u64, S::Output>, SwarmHandles), Error>;
}

/// A partition and the worker it goes to.
type Packet<S> = (usize, PartitionPacket<S>);

impl<'scope, P: ExchangeData + Clone, Q: ExchangeData + Clone> Swarm<'scope, P, Q>
    for StreamVec<'scope, u64, Record<P, Q>>
{
    fn swarm<S: PartitionState<Point = P, Query = Q>>(
        self,
        config: &SwarmConfig<impl CostModel + Clone + 'static>,
        policy: Policy,
    ) -> Result<(StreamVec<'scope, u64, S::Output>, SwarmHandles), Error> {
        policy.validate()?;
        // A static plan needs no coordinator: no reports, no updates, and
        // nothing holds the records back but their own epochs.
        let adaptive = !matches!(policy, Policy::Static);
        let core = Core::<S, _>::new(&self, config, adaptive)?;
        let scope = self.scope();
        let lead = core.round * config.plan_depth;
        // Only SWARM's own plan opens from epoch 0's census.
        let opens = config.opening && matches!(policy, Policy::Adaptive(_));
        let coordinator = adaptive.then(|| {
            let coordinator = Coordinator::new(policy, core.initial.clone(), scope.peers(), (core.round, lead))
                .with_logger(scope.worker().logger_for::<SwarmEventBuilder>(LOG_NAME));
            Rc::new(RefCell::new(coordinator))
        });
        let (plan_handle, plan_stream) = scope.feedback::<Vec<PlanUpdate>>(lead);
        let opening = coordinator.as_ref().filter(|_| opens).map_or_else(
            || empty(scope),
            |coordinator| open(self.clone(), &config.grid, config.cost.clone(), Rc::clone(coordinator)),
        );
        let orders = Rc::clone(&core.orders);
        let (results, reports, handles) = core.run(self, (opening, plan_stream));
        match coordinator {
            Some(coordinator) => coordinate(reports, coordinator, orders).connect_loop(plan_handle),
            None => empty(scope).connect_loop(plan_handle),
        }
        Ok((results, handles))
    }

    fn swarm_controlled<S: PartitionState<Point = P, Query = Q>>(
        self,
        config: &SwarmConfig<impl CostModel + Clone + 'static>,
        control: StreamVec<'scope, u64, PlanChange>,
    ) -> Result<(StreamVec<'scope, u64, S::Output>, SwarmHandles), Error> {
        let core = Core::<S, _>::new(&self, config, false)?;
        let scope = self.scope();
        let logger = scope.worker().logger_for::<SwarmEventBuilder>(LOG_NAME);
        let controller = Controller::new(core.initial.clone(), scope.peers(), core.round, logger);
        let plan = control_plan(control, controller, Rc::clone(&core.orders));
        let (results, _reports, handles) = core.run(self, (empty(scope), plan));
        Ok((results, handles))
    }
}

/// What both forms of SWARM build: the dispatchers and executors, which
/// route records by a plan and carry out its updates, whoever concludes them.
struct Core<S: PartitionState, M: CostModel> {
    initial: GlobalIndex,
    round: u64,
    executor: Rc<RefCell<Executor<S, M>>>,
    figures: Rc<RefCell<ExecutorFigures>>,
    refused: Rc<RefCell<Refused>>,
    orders: Rc<RefCell<Orders>>,
}

impl<S: PartitionState, M: CostModel + Clone + 'static> Core<S, M> {
    /// The core of `records` under `config`, its executors planning their
    /// own splits and merges and offering load if `plans_locally`.
    fn new<R: Clone + 'static>(
        records: &StreamVec<'_, u64, R>,
        config: &SwarmConfig<M>,
        plans_locally: bool,
    ) -> Result<Self, Error> {
        config.validate()?;
        let scope = records.scope();
        let (me, workers) = (scope.index(), scope.peers());
        let round = config.round_for(workers);
        let (initial, base) = config.initial.lay_out(&config.grid, workers)?;
        // Workers mint from `workers + 1` disjoint sequences; the last is
        // left to whoever plans (SwarmConfig::initial_plan).
        let store = Store::<S>::new(me, initial.clone(), IdMint::new(base, me, workers + 1));
        let figures = Rc::new(RefCell::new(ExecutorFigures::default()));
        let executor = Executor::new(
            store,
            config.cost.clone(),
            (round, config.merge_every),
            config.split_gain,
            plans_locally,
            config.work_per_check,
            Rc::clone(&figures),
        )
        .with_logger(scope.worker().logger_for::<SwarmEventBuilder>(LOG_NAME));
        Ok(Core {
            initial,
            round,
            executor: Rc::new(RefCell::new(executor)),
            figures,
            refused: Rc::new(RefCell::new(Refused::default())),
            orders: Rc::new(RefCell::new(Orders::default())),
        })
    }

    /// Routes `records` by the initial plan changed by the `opening` and
    /// then by the `plan` updates, and runs them: the results, the round
    /// reports, and the handles.
    #[allow(clippy::type_complexity)]
    fn run<'scope>(
        self,
        records: StreamVec<'scope, u64, Record<S::Point, S::Query>>,
        (opening, plan): (
            StreamVec<'scope, u64, Vec<PlanChange>>,
            StreamVec<'scope, u64, PlanUpdate>,
        ),
    ) -> (
        StreamVec<'scope, u64, S::Output>,
        StreamVec<'scope, u64, RoundReport>,
        SwarmHandles,
    )
    where
        S::Point: ExchangeData,
        S::Query: ExchangeData,
    {
        let scope = records.scope();
        let (state_handle, state_stream) = scope.feedback::<Vec<Packet<S>>>(1);
        let routed = dispatch(
            records,
            (opening.clone(), plan.clone()),
            self.initial,
            Rc::clone(&self.refused),
        );
        let (results, reports, packets) = execute(routed, (opening, plan, state_stream), self.executor, self.round);
        packets.connect_loop(state_handle);
        let (probe, results) = results.probe();
        let handles = SwarmHandles {
            probe,
            figures: self.figures,
            refused: self.refused,
            orders: self.orders,
        };
        (results, reports, handles)
    }
}

/// What an executor waits on besides its records: partitions arriving and
/// plan updates, by epoch, and, once the records have ended, the last round
/// end at which it must still apply an update.
struct Pending<S> {
    arrivals: BTreeMap<u64, Vec<PartitionPacket<S>>>,
    updates: BTreeMap<u64, PlanUpdate>,
    ending: Ending,
}

/// How far an executor runs once its records have ended.
#[derive(Clone, Copy)]
enum Ending {
    /// Records may still come.
    Open,
    /// Through the round end at this epoch, the last whose update changes
    /// the plan.
    Through(u64),
    /// No update changes the plan: it stops.
    Now,
}

impl<S> Default for Pending<S> {
    fn default() -> Self {
        Pending {
            arrivals: BTreeMap::new(),
            updates: BTreeMap::new(),
            ending: Ending::Open,
        }
    }
}

impl<S> Pending<S> {
    /// Keeps plan updates by the epoch they hold from, until the round end
    /// before it applies them.
    fn note_updates(&mut self, updates: impl Iterator<Item = PlanUpdate>) {
        for update in updates {
            self.updates.insert(update.effective, update);
        }
    }

    /// Once the records have ended: whether every round end that still
    /// matters is past (`round_end`: the next one, if any). Every update
    /// routing used has arrived (a dispatcher routes epoch t only once the
    /// plan for t is final everywhere), and the partitions it moves must
    /// still reach their owners, which may hold records for them: round
    /// ends are processed until those updates are applied.
    fn drained(&mut self, round_end: Option<u64>) -> bool {
        if !self.arrivals.is_empty() {
            return false;
        }
        if let Ending::Open = self.ending {
            let last = self.updates.iter().filter(|(_, update)| !update.changes.is_empty());
            self.ending = match last.map(|(&effective, _)| effective - 1).max() {
                Some(last) => Ending::Through(last),
                None => Ending::Now,
            };
        }
        match self.ending {
            Ending::Through(last) => round_end.is_none_or(|end| end > last),
            Ending::Now | Ending::Open => true,
        }
    }

    /// The next epoch to process: the earliest of the records held
    /// (`records`), the partitions arriving, and the next round end.
    fn next(&self, records: Option<u64>, round_end: Option<u64>) -> Option<u64> {
        [records, self.arrivals.keys().next().copied(), round_end]
            .into_iter()
            .flatten()
            .min()
    }

    /// What the executor does next, given the earliest epoch of the records
    /// it holds and the frontiers of its data, plan and state inputs: an
    /// epoch is processed only once all three have passed it, as its
    /// records, plan update and arriving partitions are then all in.
    fn step(&mut self, records: Option<u64>, frontiers: &[MutableAntichain<u64>], round_end: Option<u64>) -> Step {
        let records_ended = frontiers[0].is_empty() && records.is_none();
        if records_ended && self.drained(round_end) {
            return Step::Stop;
        }
        let Some(time) = self.next(records, round_end) else {
            return Step::Wait;
        };
        if frontiers.iter().any(|frontier| frontier.less_equal(&time)) {
            Step::Wait
        } else {
            Step::Epoch(time)
        }
    }
}

/// What the executor does next ([`Pending::step`]).
enum Step {
    /// Process this epoch: its inputs are complete.
    Epoch(u64),
    /// Wait for the inputs to pass the next epoch.
    Wait,
    /// Stop: the records have ended and no round end still matters, so the
    /// control outputs' capabilities go.
    Stop,
}

/// Processes epoch `time` (with the partitions that arrived for it, and its
/// records if any), emitting its results at the records' capability: an
/// epoch without records has no results, and holds no capability for them.
fn run_epoch<S: PartitionState, M: CostModel>(
    executor: &mut Executor<S, M>,
    data: &mut TimeStash<u64, Vec<DispatchedTo<S>>>,
    pending: &mut Pending<S>,
    time: u64,
    results: &mut OutputBuilderSession<'_, u64, CapacityContainerBuilder<Vec<S::Output>>>,
) {
    let arrived = pending.arrivals.remove(&time).unwrap_or_default();
    let mut held = None;
    data.drain_while(|waiting| *waiting == time, |cap, records| held = Some((cap, records)));
    match held {
        Some((cap, records)) => {
            let mut session = results.session(&cap);
            executor.epoch(time, arrived, records, &mut |output| session.give(output));
        }
        None => executor.epoch(time, arrived, Vec::new(), &mut |_| {}),
    }
}

/// Applies the plan update that holds from the epoch after round end
/// `time`, if one came: the partitions leaving, for their new owners. An
/// update that cannot be applied means the workers' plans diverged, which
/// no later epoch could repair.
fn apply_update<S: PartitionState, M: CostModel>(
    executor: &mut Executor<S, M>,
    pending: &mut Pending<S>,
    time: u64,
) -> Option<Vec<Packet<S>>> {
    let update = pending.updates.remove(&(time + 1))?;
    let leaving = executor
        .apply_update(time, &update)
        .unwrap_or_else(|error| panic!("cannot apply the plan update for epoch {}: {error}", time + 1));
    Some(leaving)
}

/// Holds each epoch's routed records until the epoch is complete.
fn stash<S: PartitionState, P: Pull<Message<u64, Vec<DispatchedTo<S>>>>>(
    input: &mut InputHandleCore<u64, Vec<DispatchedTo<S>>, P>,
    data: &mut TimeStash<u64, Vec<DispatchedTo<S>>>,
) {
    input.for_each_stamp(|cap, batches| {
        if let Some(held) = data.at(&cap) {
            for batch in batches {
                held.append(batch);
            }
        }
    });
}

/// Applies the opening, which comes before any epoch is processed. One
/// that cannot be applied means the workers' plans diverged.
fn take_opening<S: PartitionState, M: CostModel, Puller: Pull<Message<u64, Vec<Vec<PlanChange>>>>>(
    input: &mut InputHandleCore<u64, Vec<Vec<PlanChange>>, Puller>,
    executor: &RefCell<Executor<S, M>>,
) {
    input.for_each_stamp(|_, batches| {
        for changes in batches.flat_map(|batch| batch.drain(..)) {
            executor
                .borrow_mut()
                .open(&changes)
                .unwrap_or_else(|error| panic!("cannot apply the opening: {error}"));
        }
    });
}

/// What an executor takes besides its records: the opening, the plan
/// updates and the partitions arriving.
type Control<'scope, S> = (
    StreamVec<'scope, u64, Vec<PlanChange>>,
    StreamVec<'scope, u64, PlanUpdate>,
    StreamVec<'scope, u64, Packet<S>>,
);

/// The executor operator: when each epoch is complete, hands it to the
/// [`Executor`]; at round ends, reports and sends leaving partitions.
#[allow(clippy::type_complexity)]
fn execute<'scope, S: PartitionState, M: CostModel + 'static>(
    routed: StreamVec<'scope, u64, DispatchedTo<S>>,
    (opening, plan, state): Control<'scope, S>,
    executor: Rc<RefCell<Executor<S, M>>>,
    round: u64,
) -> (
    StreamVec<'scope, u64, S::Output>,
    StreamVec<'scope, u64, RoundReport>,
    StreamVec<'scope, u64, Packet<S>>,
) {
    let mut builder = OperatorBuilder::new("SwarmExecutor".to_owned(), routed.scope());
    let mut data_in = builder.new_input(routed, Exchange::new(|(holder, _, _): &DispatchedTo<S>| *holder as u64));
    let mut plan_in = builder.new_input(plan, Pipeline);
    let mut state_in = builder.new_input(state, Exchange::new(|(to, _): &(usize, PartitionPacket<S>)| *to as u64));
    let mut opening_in = builder.new_input(opening, Pipeline);
    // The results first: the data stash's capabilities are for output 0.
    let (results_out, results) = builder.new_output::<Vec<S::Output>>();
    let (reports_out, reports) = builder.new_output::<Vec<RoundReport>>();
    let (packets_out, packets) = builder.new_output::<Vec<Packet<S>>>();
    let mut results_out = OutputBuilder::<_, CapacityContainerBuilder<Vec<S::Output>>>::from(results_out);
    let mut reports_out = OutputBuilder::<_, CapacityContainerBuilder<Vec<RoundReport>>>::from(reports_out);
    let mut packets_out = OutputBuilder::<_, CapacityContainerBuilder<Vec<Packet<S>>>>::from(packets_out);
    builder.build(move |mut caps| {
        // One capability per control output, each held at the next round end.
        let mut packet_cap = caps.pop();
        let mut round_cap = caps.pop();
        for cap in round_cap.iter_mut().chain(packet_cap.iter_mut()) {
            cap.downgrade(&(round - 1));
        }
        let mut data: TimeStash<u64, Vec<DispatchedTo<S>>> = TimeStash::default();
        let mut pending = Pending::default();
        move |frontiers| {
            stash::<S, _>(&mut data_in, &mut data);
            take_opening(&mut opening_in, &executor);
            plan_in.for_each_stamp(|_, batches| {
                let mut executor = executor.borrow_mut();
                let updates = batches.flat_map(|batch| batch.drain(..));
                pending.note_updates(updates.inspect(|update| executor.note(update)));
            });
            state_in.for_each_stamp(|cap, batches| {
                let Some(&time) = cap.least() else { return };
                let packets = batches.flat_map(|batch| batch.drain(..)).map(|(_, packet)| packet);
                pending.arrivals.entry(time).or_default().extend(packets);
            });
            let mut results_session = results_out.activate();
            let mut reports_session = reports_out.activate();
            let mut packets_session = packets_out.activate();
            let mut executor = executor.borrow_mut();
            loop {
                let round_end = round_cap.as_ref().map(|cap| *cap.time());
                let time = match pending.step(data.first_time().copied(), frontiers, round_end) {
                    Step::Epoch(time) => time,
                    Step::Wait => break,
                    Step::Stop => {
                        round_cap = None;
                        packet_cap = None;
                        break;
                    }
                };
                run_epoch(&mut executor, &mut data, &mut pending, time, &mut results_session);
                if Some(time) == round_end {
                    debug_assert!(executor.ends_round(time));
                    let cap = round_cap.as_mut().expect("held until the input ends");
                    reports_session.session(&*cap).give(executor.end_round(time));
                    if let Some(leaving) = apply_update(&mut executor, &mut pending, time) {
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
        }
    });
    (results, reports, packets)
}
