//! Placing each hot key's records on the workers of its latest deal. A
//! time's deals are decided only once every worker has counted that time's
//! updates, so each worker holds its own updates of a time until that
//! time's deals are learned, then sends each straight to the worker the
//! deal in force names (a hot key's first time included): nothing lands on
//! an owner to be passed on. Left where they were arranged, a key's records
//! from before a deal would stay on its owner (or an earlier deal's
//! workers), their retractions would go elsewhere, and every change of the
//! other side's rows of the key would meet them there for as long as they
//! live. So each worker also watches its own arrangement: when a key is
//! dealt anew it looks up the key's records it holds, and in every new
//! batch the hot keys' records that the latest deal places on another
//! worker (moved there by a worker that had not learned the deal yet); it
//! retracts each such record here and inserts it there, at the earliest
//! time it may still send at. Insertions and retractions then meet, and the
//! arrangements compact.
//!
//! A container waits for the time of its stamp: an update of a later
//! time in it (differential's operators may send one) is sent by the
//! deals learned by then, and moved as above if a later deal places it
//! elsewhere.
//!
//! The two-level reductions hold at the owners instead
//! ([`hold_for_first_deal`]): their senders route as they go, and the
//! owner passes a hot key's updates on to their parts.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use differential_dataflow::difference::{Abelian, IsZero, Semigroup};
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::{TraceAgent, TraceReplayInstruction};
use differential_dataflow::trace::cursor::{cursor_list, Cursor};
use differential_dataflow::trace::implementations::ValSpine;
use differential_dataflow::trace::{Navigable, TraceReader};
use differential_dataflow::{ExchangeData, Hashable};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, ParallelizationContract, Pipeline};
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::OutputBuilder;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Capability, Concat, Exchange as ExchangeRecords};
use timely::dataflow::StreamVec;
use timely::order::TotalOrder;
use timely::progress::{Antichain, Timestamp};
use timely::scheduling::Activator;

use super::arrange::{arrange_routed, Arranged};
use super::deals::Deal;
use super::key_index::key_route;
use super::route::{by_deal, SharedRoutes};

/// Advances of an arrangement's frontier after a key's deal during which
/// its records in new batches are checked: moves sent by a worker that had
/// not learned the deal arrive within a round or two.
const RECENT: u32 = 8;

/// The trace of a worker's arrangement of a side, and the queue of its new
/// batches (as differential's `new_listener` hands it out), shared by the
/// mover with the code that builds the arrangement after it.
type Watch<K, V, T, R> = Rc<RefCell<Option<Watched<K, V, T, R>>>>;

type Watched<K, V, T, R> = (
    TraceAgent<ValSpine<K, V, T, R>>,
    Rc<(
        Activator,
        RefCell<VecDeque<TraceReplayInstruction<ValSpine<K, V, T, R>>>>,
    )>,
);

/// Updates waiting for their time's deals, per time, with the
/// capabilities to let them go here or send them on.
type Waiting<K, V, T, R> = BTreeMap<T, (Capability<T>, Capability<T>, Vec<Vec<((K, V), T, R)>>)>;

/// The moves' output: each update with the worker it goes to.
type Moves<K, V, T, R> = OutputBuilder<T, CapacityContainerBuilder<Vec<(usize, ((K, V), T, R))>>>;

/// `updates` counted and held by `routes` at their senders, then sent by
/// their deals and arranged by key, with each hot key's records placed on
/// the workers of its latest deal (see the module doc), and a stream whose
/// frontier passes a time once this worker has counted its updates, for
/// [`hot_keys`](super::hot_keys::hot_keys) to decide on: the arrangement
/// waits for those decisions.
pub(crate) fn arrange_moving<'scope, K, V, T, R>(
    updates: StreamVec<'scope, T, ((K, V), T, R)>,
    routes: &SharedRoutes<K, T>,
    name: &str,
) -> (Arranged<'scope, K, V, T, R>, StreamVec<'scope, T, ()>)
where
    T: Timestamp + Lattice + TotalOrder,
    K: ExchangeData + Hashable,
    V: ExchangeData + Hashable,
    R: ExchangeData + Abelian,
{
    let scope = updates.scope();
    let (held, watch, address) = hold(updates, Pipeline, routes, name, Deal::Latest, Mover::round);
    // Each update leaves its sender once its time's deals are learned:
    // every update goes straight to the worker its deal names.
    let sent = held.here.exchange(by_deal(routes));
    let arranged = arrange_routed(sent.concat(held.on), Pipeline, name);
    let mut trace = arranged.trace.clone();
    let queue = trace.new_listener(scope.activator_for(address));
    *watch.borrow_mut() = Some((trace, queue));
    (arranged, held.routed)
}

/// Updates held until their time's deals are learned, then let go.
pub(crate) struct Held<'scope, K, V, T: Timestamp, R> {
    /// The updates let go where they are (at the owners: to be reduced
    /// there; at the senders: to be sent by their deals).
    pub(crate) here: StreamVec<'scope, T, ((K, V), T, R)>,
    /// The updates passed on (and records moved), on the worker they went to.
    pub(crate) on: StreamVec<'scope, T, ((K, V), T, R)>,
    /// A stream whose frontier passes a time once the updates of it are
    /// counted (at the owners: every worker's; at the senders: this
    /// worker's).
    pub(crate) routed: StreamVec<'scope, T, ()>,
}

/// `updates` sent to their keys' owners, each held there until its time's
/// deals are learned: those of keys hot by then (by their first deal) go
/// on to their first part, in [`Held::on`], so that no owner reduces a hot
/// key's records from the time it turned hot, that time included.
pub(crate) fn hold_for_first_deal<'scope, K, V, T, R>(
    updates: StreamVec<'scope, T, ((K, V), T, R)>,
    routes: &SharedRoutes<K, T>,
    name: &str,
) -> Held<'scope, K, V, T, R>
where
    T: Timestamp + Lattice + TotalOrder,
    K: ExchangeData + Hashable,
    V: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
{
    let to_owner = Exchange::new(|((key, _), _, _): &((K, V), T, R)| key_route(key));
    // Records stay where they are first placed: nothing to watch.
    hold(updates, to_owner, routes, name, Deal::First, |_, _, _| {}).0
}

/// The operator both of the above build: `updates` sent by `pact` and held
/// until their time's deals are learned, then let go by `deal` (by the
/// latest, at their senders: counted as they arrive, and let go as they
/// came, for the exchange by deal after; by the first, at the owners:
/// kept there or passed on to their parts); then `round` sends the moves of
/// records the returned watch (once set) finds misplaced.
#[allow(clippy::type_complexity)]
fn hold<'scope, K, V, T, R, P>(
    updates: StreamVec<'scope, T, ((K, V), T, R)>,
    pact: P,
    routes: &SharedRoutes<K, T>,
    name: &str,
    deal: Deal,
    mut round: impl FnMut(&mut Mover<K, V, T, R>, &Capability<T>, &mut Moves<K, V, T, R>) + 'static,
) -> (Held<'scope, K, V, T, R>, Watch<K, V, T, R>, Rc<[usize]>)
where
    T: Timestamp + Lattice + TotalOrder,
    K: ExchangeData + Hashable,
    V: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
    P: ParallelizationContract<T, Vec<((K, V), T, R)>>,
{
    let scope = updates.scope();
    let watch: Watch<K, V, T, R> = Rc::new(RefCell::new(None));
    let mut builder = OperatorBuilder::new(format!("{name}Move"), scope);
    let address = builder.operator_info().address;
    routes
        .borrow_mut()
        .watch_deals(scope.activator_for(Rc::clone(&address)));
    let mut input = builder.new_input(updates, pact);
    let (records, records_stream) = builder.new_output();
    let (moves, moves_stream) = builder.new_output();
    let (_, routed_stream) = builder.new_output::<Vec<()>>();
    let mut records = OutputBuilder::<T, CapacityContainerBuilder<Vec<((K, V), T, R)>>>::from(records);
    let mut moves = Moves::<K, V, T, R>::from(moves);
    let mut mover = Mover::new(scope.index(), Rc::clone(routes), Rc::clone(&watch), deal);
    builder.build(move |mut caps| {
        // Moves of arranged records are sent at the earliest time the
        // held updates may still carry; the third output says how far the
        // counting has come.
        let (mut routed, mut held) = (caps.pop(), caps.pop());
        // Updates wait here, per time, until that time's deals are
        // learned: each then goes to the worker its deal names.
        let mut waiting: Waiting<K, V, T, R> = BTreeMap::new();
        let mut frontier = Antichain::from_elem(T::minimum());
        move |frontiers| {
            input.for_each(|cap, data| {
                // A stamp without a time carries no data.
                let Some(time) = cap.least().cloned() else { return };
                mover.observe(data);
                let (_, _, held) = waiting.entry(time).or_insert_with(|| {
                    (
                        cap.retain_least(0).expect("a time"),
                        cap.retain_least(1).expect("a time"),
                        Vec::new(),
                    )
                });
                held.push(std::mem::take(data));
            });
            mover.learn_deals();
            if frontiers[0].frontier() != frontier.borrow() {
                frontier = frontiers[0].frontier().to_owned();
                mover.age();
            }
            mover.release(&mut waiting, &mut records, &mut moves);
            if let Some(cap) = held.as_mut() {
                round(&mut mover, cap, &mut moves);
            }
            match frontier.first() {
                Some(time) => held
                    .iter_mut()
                    .chain(routed.iter_mut())
                    .for_each(|cap| cap.downgrade(time)),
                None => (held, routed) = (None, None),
            }
        }
    });
    let held = Held {
        here: records_stream,
        on: send_on(moves_stream, routes),
        routed: routed_stream,
    };
    (held, watch, address)
}

/// Each update of `moves` sent to the worker it names, and counted there
/// for the log.
#[allow(clippy::type_complexity)]
fn send_on<'scope, K, V, T, R>(
    moves: StreamVec<'scope, T, (usize, ((K, V), T, R))>,
    routes: &SharedRoutes<K, T>,
) -> StreamVec<'scope, T, ((K, V), T, R)>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable,
    V: ExchangeData,
    R: ExchangeData,
{
    let routes = Rc::clone(routes);
    moves
        .exchange(move |(worker, _): &(usize, ((K, V), T, R))| {
            routes.borrow_mut().log.sent_to(*worker);
            *worker as u64
        })
        .map(|(_, update)| update)
}

/// What one worker's mover keeps between rounds.
struct Mover<K, V, T, R>
where
    T: Timestamp + Lattice,
    K: ExchangeData,
    V: ExchangeData,
    R: ExchangeData + Semigroup,
{
    me: usize,
    routes: SharedRoutes<K, T>,
    /// By which deal updates are placed: records move with the latest
    /// only (the first never changes).
    deal: Deal,
    watch: Watch<K, V, T, R>,
    /// The arrangement's upper, as its batches have told it.
    upper: Antichain<T>,
    /// Records of hot keys seen in new batches that the latest deal places
    /// on another worker.
    astray: Vec<(K, V)>,
    /// Keys dealt anew since the last round: every record of theirs here is
    /// looked up.
    dealt: Vec<K>,
    /// Keys dealt lately, in order, with how many more advances of the
    /// input's frontier their updates, and their records in new batches,
    /// are checked for (a worker that had not learned the deal may still
    /// route or move some here).
    recent: BTreeMap<K, u32>,
    /// The time of the last moves sent: the next round waits until the
    /// arrangement holds them, or it would move them again.
    sent_at: Option<T>,
}

impl<K, V, T, R> Mover<K, V, T, R>
where
    T: Timestamp + Lattice + TotalOrder,
    K: ExchangeData + Hashable,
    V: ExchangeData + Hashable,
    R: ExchangeData + Semigroup,
{
    fn new(me: usize, routes: SharedRoutes<K, T>, watch: Watch<K, V, T, R>, deal: Deal) -> Self {
        Mover {
            me,
            routes,
            deal,
            watch,
            upper: Antichain::from_elem(T::minimum()),
            astray: Vec::new(),
            dealt: Vec::new(),
            recent: BTreeMap::new(),
            sent_at: None,
        }
    }

    /// Takes the keys dealt anew since the last call: their updates are
    /// checked for a while and, where records move with their deals, their
    /// records here are looked up at the next round and checked in new
    /// batches.
    fn learn_deals(&mut self) {
        let dealt = self.routes.borrow_mut().deals.take_dealt();
        for key in &dealt {
            self.recent.insert(key.clone(), RECENT);
        }
        if matches!(self.deal, Deal::Latest) {
            self.dealt.extend(dealt);
        }
    }

    /// The input's frontier advanced: one advance fewer for each lately
    /// dealt key.
    fn age(&mut self) {
        self.recent.retain(|_, left| {
            *left -= 1;
            *left > 0
        });
    }

    /// Updates held at their senders (placed by the latest deal) are
    /// counted as they arrive, for the decisions: the exchange after the
    /// hold does not count them.
    fn observe(&self, updates: &[((K, V), T, R)]) {
        if matches!(self.deal, Deal::Latest) {
            let mut routes = self.routes.borrow_mut();
            updates
                .iter()
                .for_each(|((key, _), time, _)| routes.sampling.observe(key, time));
        }
    }

    /// Lets go the waiting updates of every time whose deals are all
    /// learned. Held at their senders (by the latest deal), they go on as
    /// they came, to the exchange by deal. Held at their owners (by the
    /// first), each goes to the part its key's first deal names, or stays;
    /// where no key was dealt lately, every sender routed by the deals
    /// that hold now, and they go on as they came.
    #[allow(clippy::type_complexity)]
    fn release(
        &mut self,
        waiting: &mut Waiting<K, V, T, R>,
        records: &mut OutputBuilder<T, CapacityContainerBuilder<Vec<((K, V), T, R)>>>,
        moves: &mut Moves<K, V, T, R>,
    ) {
        let (mut records, mut moves) = (records.activate(), moves.activate());
        while let Some(entry) = waiting.first_entry() {
            if !self.routes.borrow().learning.learned(entry.key()) {
                break;
            }
            let (here, there, containers) = entry.remove();
            let mut here = records.session(&here);
            // Held at their senders (by the latest deal), they are exchanged
            // by their deals once the hold lets them go.
            let at_senders = matches!(self.deal, Deal::Latest);
            if at_senders || self.recent.is_empty() || !self.routes.borrow().deals.any_hot() {
                // Nothing to look up: the containers go on as they came.
                containers
                    .into_iter()
                    .for_each(|mut updates| here.give_container(&mut updates));
                continue;
            }
            let mut there = moves.session(&there);
            for updates in containers {
                // Where each goes, asked before sending: the exchange counts
                // what it sends in the same routes.
                let routes = self.routes.borrow();
                let parts: Vec<Option<usize>> = updates
                    .iter()
                    .map(|((key, val), time, _)| {
                        routes.deals.part(key, Some(time), Deal::First, || val.hashed().into())
                    })
                    .collect();
                drop(routes);
                let passed = parts.iter().filter(|part| part.is_some()).count() as u64;
                if passed > 0 {
                    self.routes.borrow_mut().log.passed_on(passed);
                }
                for (update, part) in updates.into_iter().zip(parts) {
                    match part {
                        Some(worker) => there.give((worker, update)),
                        None => here.give(update),
                    }
                }
            }
        }
    }
}

impl<K, V, T, R> Mover<K, V, T, R>
where
    T: Timestamp + Lattice + TotalOrder,
    K: ExchangeData + Hashable,
    V: ExchangeData + Hashable,
    R: ExchangeData + Abelian,
{
    /// Reads the new batches and deals, and once the arrangement holds the
    /// last moves, sends the next at `cap`'s time.
    fn round(&mut self, cap: &Capability<T>, moves: &mut Moves<K, V, T, R>) {
        let watch = Rc::clone(&self.watch);
        let mut watch = watch.borrow_mut();
        let Some((trace, queue)) = watch.as_mut() else { return };
        for instruction in queue.1.borrow_mut().drain(..) {
            match instruction {
                TraceReplayInstruction::Frontier(upper) => {
                    // Moves read accumulations only: the history may compact
                    // (a handle that held it back would pin the arrangement).
                    trace.set_logical_compaction(upper.borrow());
                    trace.set_physical_compaction(upper.borrow());
                    self.upper = upper;
                }
                TraceReplayInstruction::Span(span, _) => {
                    if let Some(batch) = span.inner {
                        self.look_for_astray(&batch);
                    }
                }
            }
        }
        let settled = self.sent_at.as_ref().is_none_or(|sent| !self.upper.less_equal(sent));
        if !settled || (self.astray.is_empty() && self.dealt.is_empty()) {
            return;
        }
        let Some(batches) = trace.batches_through(self.upper.borrow()) else {
            return;
        };
        // The values to look up, by key in order (`None`: every value).
        let mut wanted: BTreeMap<K, Option<BTreeSet<V>>> = BTreeMap::new();
        for key in self.dealt.drain(..) {
            wanted.insert(key, None);
        }
        for (key, val) in self.astray.drain(..) {
            if let Some(vals) = wanted.entry(key).or_insert_with(|| Some(BTreeSet::new())) {
                vals.insert(val);
            }
        }
        let (mut cursor, storage) = cursor_list(batches);
        let mut found = Vec::new();
        for (key, vals) in wanted {
            cursor.seek_key(&storage, &key);
            if cursor.get_key(&storage) != Some(&key) {
                continue;
            }
            while let Some(val) = cursor.get_val(&storage) {
                if vals.as_ref().is_none_or(|vals| vals.contains(val)) {
                    let val = val.clone();
                    found.push(((key.clone(), val), accumulated(&mut cursor, &storage)));
                }
                cursor.step_val(&storage);
            }
        }
        // Where each goes, asked before sending: the exchange counts what
        // it sends in the same routes.
        let routes = self.routes.borrow();
        let found: Vec<_> = found
            .into_iter()
            .filter_map(|((key, val), sum)| {
                let worker = routes.deals.part(&key, None, Deal::Latest, || val.hashed().into())?;
                (worker != self.me).then_some((worker, (key, val), sum?))
            })
            .collect();
        drop(routes);
        if !found.is_empty() {
            let time = cap.time().clone();
            let mut moves = moves.activate();
            let mut session = moves.session(cap);
            for (worker, record, sum) in found {
                let mut retracted = sum.clone();
                retracted.negate();
                session.give((self.me, (record.clone(), time.clone(), retracted)));
                session.give((worker, (record, time.clone(), sum)));
            }
            self.sent_at = Some(time);
        }
    }

    /// Notes the records of lately dealt keys in `batch` that the latest
    /// deal places on another worker.
    fn look_for_astray<B: Navigable>(&mut self, batch: &B)
    where
        for<'a> B::Cursor: Cursor<Key<'a> = &'a K, Val<'a> = &'a V>,
    {
        if self.recent.is_empty() {
            return;
        }
        let routes = self.routes.borrow();
        let mut cursor = batch.cursor();
        for key in self.recent.keys() {
            cursor.seek_key(batch, key);
            if cursor.get_key(batch) != Some(key) {
                continue;
            }
            while let Some(val) = cursor.get_val(batch) {
                if routes
                    .deals
                    .part(key, None, Deal::Latest, || val.hashed().into())
                    .is_some_and(|worker| worker != self.me)
                {
                    self.astray.push((key.clone(), val.clone()));
                }
                cursor.step_val(batch);
            }
        }
    }
}

/// The accumulated multiplicity of the cursor's current value, if not zero.
fn accumulated<C: Cursor>(cursor: &mut C, storage: &C::Storage) -> Option<C::Diff>
where
    C::Diff: Semigroup,
{
    let mut sum: Option<C::Diff> = None;
    cursor.map_times(storage, |_, diff| {
        let diff = C::owned_diff(diff);
        match &mut sum {
            Some(sum) => sum.plus_equals(&diff),
            None => sum = Some(diff),
        }
    });
    sum.filter(|sum| !sum.is_zero())
}
