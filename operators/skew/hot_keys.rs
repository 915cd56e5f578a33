//! The dataflow that decides the hot keys: once every worker has counted
//! its updates of a time (as it routes them, or as they arrive at the hold
//! that keeps them until their time's deals are learned), each worker
//! reports its sampled counts of the time to worker 0, which decides which keys are hot and how each is
//! dealt ([`SideHotKeys`]), and tells every worker, which routes by them
//! from that time on.

use std::collections::HashMap;

use differential_dataflow::{ExchangeData, Hashable};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::{Stream, StreamVec};
use timely::order::TotalOrder;
use timely::progress::Timestamp;
use timely::Container;

use crate::common::stash::TimeStash;

use super::deals::HotKey;
use super::decision::SideHotKeys;
use super::events::{log_passed_on, log_sent, SkewEvent, SkewEventBuilder, LOG_NAME};
use super::key_index::key_route;
use super::route::SharedRoutes;
use super::settings::Skew;

/// A hot key's deal, with the side (the operator's input, by its index)
/// whose updates it splits.
pub(crate) type SideHotKey<K> = (usize, HotKey<K>);

/// What a worker tells the deciding worker about one time, for one side
/// (an input of the operator, by its index).
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Count<K> {
    /// A key it saw often on a side, and how often.
    Key(usize, K, u64),
    /// How many of its updates of a side each worker owns the key of (all
    /// of them, summed).
    Owned(usize, Vec<u64>),
}

/// One time's counts, as the deciding worker sums them: per key, and per
/// owner.
type Counted<K> = (HashMap<K, u64>, Vec<u64>);

/// The hot keys of each of `sides` (the routes of each of an operator's
/// inputs), as every worker learns them (and each side's routes with
/// them): decided on worker 0 from each worker's counts of a time, once
/// `progress` (a stream whose frontier passes a time once this worker has
/// counted its updates of it: the hold's) has passed it on every worker,
/// and sent to every worker at that time. A key is split on one side
/// only, as [`SideHotKeys`] decides.
pub(crate) fn hot_keys<'scope, T, K, C>(
    progress: Stream<'scope, T, C>,
    sides: &[SharedRoutes<K, T>],
    skew: Skew,
) -> StreamVec<'scope, T, SideHotKey<K>>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable + std::hash::Hash + std::fmt::Debug,
    C: Container + 'static,
{
    let hot = decide(report(progress, sides, skew), sides.len(), skew).broadcast();
    learn(hot.clone(), sides);
    hot
}

/// Each worker's sampled counts of every time `progress` has passed, for
/// every side, with the keys a decision could find hot (see
/// [`Skew::reports`]).
fn report<'scope, T, K, C>(
    progress: Stream<'scope, T, C>,
    sides: &[SharedRoutes<K, T>],
    skew: Skew,
) -> StreamVec<'scope, T, Count<K>>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable,
    C: Container + 'static,
{
    let peers = progress.scope().peers();
    let sides = sides.to_vec();
    progress.unary_frontier::<CapacityContainerBuilder<Vec<Count<K>>>, _, _, _>(Pipeline, "SkewCount", move |cap, _| {
        let mut cap = Some(cap);
        move |(input, frontier), output| {
            input.for_each_stamp(|_, _| {});
            if let Some(held) = cap.as_ref() {
                for (side, routes) in sides.iter().enumerate() {
                    let counted = routes
                        .borrow_mut()
                        .sampling
                        .take_counted(|time| !frontier.less_equal(time));
                    for (time, (mut keys, owned)) in counted {
                        let total: u64 = owned.iter().sum();
                        let at = held.delayed(&time);
                        let mut session = output.session(&at);
                        session.give_iterator(
                            keys.drain()
                                .filter(|&(_, _, count)| skew.reports(count, total, peers))
                                .map(|(_, key, count)| Count::Key(side, key, count)),
                        );
                        session.give(Count::Owned(side, owned));
                    }
                }
            }
            match frontier.frontier().first() {
                Some(time) => cap.iter_mut().for_each(|cap| cap.downgrade(time)),
                None => cap = None,
            }
        }
    })
}

/// Worker 0's decisions from every worker's counts of a time, at that time,
/// logged as [`SkewEvent::Hot`].
fn decide<'scope, T, K>(
    counts: StreamVec<'scope, T, Count<K>>,
    sides: usize,
    skew: Skew,
) -> StreamVec<'scope, T, SideHotKey<K>>
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable + std::hash::Hash + std::fmt::Debug,
{
    let peers = counts.scope().peers();
    let logger = counts.scope().worker().logger_for::<SkewEventBuilder>(LOG_NAME);
    counts.unary_frontier::<CapacityContainerBuilder<Vec<SideHotKey<K>>>, _, _, _>(
        Exchange::new(|_: &Count<K>| 0),
        "SkewDecide",
        move |_, _| {
            let mut hot = SideHotKeys::new(sides, peers, skew);
            let mut stash: TimeStash<T, Vec<Counted<K>>> = TimeStash::default();
            move |(input, frontier), output| {
                input.for_each_stamp(|cap, batches| {
                    let Some(counted) = stash.at(&cap) else {
                        return;
                    };
                    counted.resize_with(sides, || (HashMap::new(), vec![0; peers]));
                    for message in batches.flat_map(|batch| batch.drain(..)) {
                        match message {
                            Count::Key(side, key, count) => *counted[side].0.entry(key).or_default() += count,
                            Count::Owned(side, theirs) => counted[side]
                                .1
                                .iter_mut()
                                .zip(theirs)
                                .for_each(|(mine, theirs)| *mine += theirs),
                        }
                    }
                });
                stash.drain_complete(frontier, |cap, counted| {
                    let owner = |key: &K| (key_route(key) % peers as u64) as usize;
                    let changes = hot.end_time(counted, owner);
                    if let Some(logger) = &logger {
                        for (side, (key, shares)) in &changes {
                            logger.log(SkewEvent::Hot {
                                key: key_route(key),
                                name: format!("{key:?}"),
                                workers: shares.iter().map(|&(worker, _)| worker).collect(),
                                shares: shares.iter().map(|&(_, share)| share).collect(),
                                side: *side,
                            });
                        }
                    }
                    output.session(&cap).give_iterator(changes.into_iter());
                });
            }
        },
    )
}

/// Each side's routes learn the decisions from the time they are sent at,
/// and the frontier before which they have learned every decision;
/// whenever they move on, what this worker sent since the last time, over
/// every side, is logged as [`SkewEvent::Routed`]. What is sent after this
/// sink has finished (the last time's updates, let go once its deals are
/// learned, and their copies) each side's routes log as they are dropped.
fn learn<'scope, T, K>(hot: StreamVec<'scope, T, SideHotKey<K>>, sides: &[SharedRoutes<K, T>])
where
    T: Timestamp + TotalOrder,
    K: ExchangeData + Hashable,
{
    let (me, peers) = (hot.scope().index(), hot.scope().peers());
    let logger = hot.scope().worker().logger_for::<SkewEventBuilder>(LOG_NAME);
    let sides = sides.to_vec();
    hot.sink(Pipeline, "SkewLearn", move |(input, frontier)| {
        input.for_each_stamp(|cap, batches| {
            if let Some(time) = cap.least() {
                for (side, hot_key) in batches.flat_map(|batch| batch.drain(..)) {
                    sides[side].borrow_mut().deals.learn(time.clone(), hot_key);
                }
            }
        });
        for routes in &sides {
            routes
                .borrow_mut()
                .learning
                .learned_through(frontier.frontier().to_owned());
        }
        if let Some(logger) = &logger {
            let mut sent = vec![0; peers];
            sides
                .iter()
                .for_each(|routes| routes.borrow_mut().log.take_sent(&mut sent));
            log_sent(logger, me, sent);
            let updates = sides
                .iter()
                .map(|routes| routes.borrow_mut().log.take_passed_on())
                .sum();
            log_passed_on(logger, me, updates);
        }
    });
}
