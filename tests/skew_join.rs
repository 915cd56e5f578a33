//! `skew_join`, `skew_semijoin` and `skew_antijoin` against differential's
//! own `join`, `semijoin` and `antijoin`: random collections with
//! insertions and retractions over several times, keys turning hot at
//! different times, at 1 to 4 workers; the consolidated difference of each
//! pair of outputs must be empty at every time. And every update a join
//! sends is logged, the last time's included.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::{Hashable, VecCollection};
use equipoise::skew::{Skew, SkewEvent, SkewEventBuilder, SkewJoin, LOG_NAME};
use proptest::prelude::*;

mod support;
use support::feed::feed_in_turns;

/// Records of a semi- or antijoin as a join's, (key, (value, 0)).
fn as_joined(records: VecCollection<'_, u64, (u8, u16), isize>) -> VecCollection<'_, u64, (u8, (u16, u16)), isize> {
    records.map(|(key, value)| (key, (value, 0)))
}

/// Updates as (key, value, time, diff).
type Updates = Vec<(u8, u16, u64, isize)>;

/// What a run found: mismatched updates between the skew-proof operators
/// and differential's (should be none), how many updates `join` produced
/// (so that the comparison is not vacuous), and the deals the skew-proof
/// operators made (each key's hash, workers and the side split, as
/// logged).
struct Found {
    mismatched: usize,
    produced: usize,
    deals: Vec<Dealt>,
}

/// A deal as logged: the key's hash, its workers, their shares and the
/// side split.
type Dealt = (u64, Vec<usize>, Vec<f64>, usize);

/// An update as (record, time, diff), the form the inputs are fed in.
type Fed = ((u8, u16), u64, isize);

/// `updates` as the inputs are fed them.
fn fed(updates: Updates) -> Arc<Vec<Fed>> {
    Arc::new(
        updates
            .into_iter()
            .map(|(key, value, at, diff)| ((key, value), at, diff))
            .collect(),
    )
}

/// Adds every deal `worker`'s skew-proof operators log to `deals`.
fn log_deals(worker: &mut timely::worker::Worker, deals: Arc<Mutex<Vec<Dealt>>>) {
    worker
        .log_register()
        .expect("a registry")
        .insert::<SkewEventBuilder, _>(LOG_NAME, move |_, events| {
            for (_, event) in events.iter().flat_map(|events| events.iter()) {
                if let SkewEvent::Hot {
                    key,
                    name,
                    workers,
                    shares,
                    side,
                } = event
                {
                    // The key is named: its Debug form is the key whose hash it is.
                    assert_eq!(name.parse::<u8>().map(|key| key.hashed()), Ok(*key), "{name}");
                    deals
                        .lock()
                        .unwrap()
                        .push((*key, workers.clone(), shares.clone(), *side));
                }
            }
        });
}

fn mismatches(workers: usize, left: Updates, right: Updates, skew: Skew) -> Found {
    let found = Arc::new(Mutex::new((0usize, 0usize)));
    let found2 = Arc::clone(&found);
    let deals = Arc::new(Mutex::new(Vec::new()));
    let deals2 = Arc::clone(&deals);
    let (left, right) = (fed(left), fed(right));
    timely::execute(timely::Config::process(workers), move |worker| {
        // The join, semijoin and antijoin all log here.
        log_deals(worker, Arc::clone(&deals2));
        let mut facts = InputSession::<u64, (u8, u16), isize>::new();
        let mut table = InputSession::<u64, (u8, u16), isize>::new();
        let (found, found2) = (Arc::clone(&found2), Arc::clone(&found2));
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let facts = facts.to_collection(scope);
            let table = table.to_collection(scope);
            let expected = facts
                .clone()
                .join(table.clone())
                .inspect(move |_| found2.lock().unwrap().1 += 1);
            // The semi- and antijoin with the table's keys, as (key, (value, 0)).
            let keys = table.clone().map(|(key, _)| key);
            let semi = as_joined(facts.clone().skew_semijoin(keys.clone()))
                .concat(as_joined(facts.clone().semijoin(keys.clone())).negate());
            let anti = as_joined(facts.clone().skew_antijoin(keys.clone()))
                .concat(as_joined(facts.clone().antijoin(keys)).negate());
            let (probe, _) = facts
                .skew_join_with(table, skew)
                .negate()
                .concat(expected)
                .concat(semi)
                .concat(anti)
                .consolidate()
                .inspect(move |update| {
                    eprintln!("mismatch: {update:?}");
                    found.lock().unwrap().0 += 1;
                })
                .probe();
            probe
        });
        feed_in_turns(worker, vec![(facts, &left[..]), (table, &right[..])], &probe);
    })
    .expect("timely runs");
    let (mismatched, produced) = *found.lock().unwrap();
    let deals = deals.lock().unwrap().clone();
    Found {
        mismatched,
        produced,
        deals,
    }
}

/// A fact stream whose hot key changes from time to time (`hot[t]` at time
/// t), with some facts retracted later, and a table with retractions too.
fn skewed(hot: &[u8], per_time: usize, retract_every: usize) -> (Updates, Updates) {
    let mut left = Vec::new();
    for (time, &hot) in hot.iter().enumerate() {
        for i in 0..per_time {
            let key = if i % 3 == 0 { (i % 7) as u8 } else { hot };
            let value = (time * per_time + i) as u16;
            left.push((key, value, time as u64, 1));
            if i % retract_every == 0 {
                left.push((key, value, time as u64 + 1 + (i % 3) as u64, -1));
            }
        }
    }
    let mut right = Vec::new();
    for key in 0..8u8 {
        right.push((key, u16::from(key), 0, 1));
        right.push((key, 100 + u16::from(key), 1, 1));
        right.push((key, 100 + u16::from(key), 3, -1));
    }
    (left, right)
}

#[test]
fn a_hot_key_split_over_workers_joins_as_join_does() {
    let (left, right) = skewed(&[0, 0, 1, 1, 2, 0], 300, 4);
    let skew = Skew::default().with_min_updates(1).unwrap();
    for workers in 1..=4 {
        let found = mismatches(workers, left.clone(), right.clone(), skew);
        assert_eq!(found.mismatched, 0, "{workers} workers");
        assert!(found.produced > 1000, "{}", found.produced);
        // Keys were dealt over several workers (none on one worker).
        assert_eq!(
            found.deals.is_empty(),
            workers == 1,
            "{workers} workers: {:?}",
            found.deals
        );
        assert!(
            workers == 1 || found.deals.iter().any(|(_, dealt, ..)| dealt.len() > 1),
            "{:?}",
            found.deals
        );
    }
}

#[test]
fn both_sides_skewed_on_the_same_keys_join_as_join_does() {
    // The table is skewed too: the hot keys 0 to 2 have hundreds of rows,
    // inserted at every time and some retracted later, before and after
    // each key turns hot.
    let (left, mut right) = skewed(&[0, 0, 1, 1, 2, 2], 200, 3);
    for time in 0..6u64 {
        for i in 0..150u16 {
            let key = (i % 3) as u8;
            let value = 1_000 + time as u16 * 150 + i;
            right.push((key, value, time, 1));
            if i % 4 == 0 {
                right.push((key, value, time + 1 + u64::from(i % 3), -1));
            }
        }
    }
    let skew = Skew::default().with_min_updates(1).unwrap();
    for workers in 1..=4 {
        let found = mismatches(workers, left.clone(), right.clone(), skew);
        assert_eq!(found.mismatched, 0, "{workers} workers");
        assert!(found.produced > 10_000, "{}", found.produced);
        assert_eq!(found.deals.is_empty(), workers == 1, "{workers} workers");
    }
}

#[test]
fn the_second_sides_hot_key_is_split_on_its_side() {
    // The table's key 5 is hot (hundreds of rows at every time, some
    // retracted later) where the facts have few of it; the facts' hot keys
    // change as before.
    let (left, mut right) = skewed(&[0, 0, 1, 1, 2, 2], 200, 3);
    for time in 0..6u64 {
        for i in 0..300u16 {
            let value = 1_000 + time as u16 * 300 + i;
            right.push((5, value, time, 1));
            if i % 4 == 0 {
                right.push((5, value, time + 1 + u64::from(i % 3), -1));
            }
        }
    }
    let skew = Skew::default().with_min_updates(1).unwrap();
    for workers in 1..=4 {
        let found = mismatches(workers, left.clone(), right.clone(), skew);
        assert_eq!(found.mismatched, 0, "{workers} workers");
        assert!(found.produced > 1000, "{}", found.produced);
        // Both sides have keys split on them.
        for side in [0, 1] {
            assert_eq!(
                found.deals.iter().any(|deal| deal.3 == side && deal.1.len() > 1),
                workers > 1,
                "{workers} workers: {:?}",
                found.deals
            );
        }
    }
}

#[test]
fn a_key_dealt_anew_as_its_load_grows_joins_as_join_does() {
    // Key 0's facts double every time, the others' stay: it is dealt anew
    // as its share of the load doubles.
    let mut left = Vec::new();
    for time in 0..7u64 {
        for i in 0..(20usize << time) + 200 {
            let key = if i < 200 { (i % 5) as u8 + 1 } else { 0 };
            let value = i as u16 ^ ((time as u16) << 12);
            left.push((key, value, time, 1));
            if i % 3 == 0 {
                left.push((key, value, time + 1, -1));
            }
        }
    }
    let (_, right) = skewed(&[0], 1, 1);
    let skew = Skew::default().with_min_updates(1).unwrap();
    for workers in [3, 4] {
        let found = mismatches(workers, left.clone(), right.clone(), skew);
        assert_eq!(found.mismatched, 0, "{workers} workers");
        let mut deals: HashMap<u64, usize> = HashMap::new();
        for (key, ..) in &found.deals {
            *deals.entry(*key).or_default() += 1;
        }
        assert!(
            deals.values().any(|&count| count > 1),
            "{workers} workers: {:?}",
            found.deals
        );
    }
}

/// Each worker's output updates at `at`, from `skew_join` of `left` and
/// `right` on `workers` workers, with the deals logged.
fn output_at(workers: usize, left: Updates, right: Updates, at: u64) -> (Vec<usize>, Vec<Dealt>) {
    let counts = Arc::new(Mutex::new(vec![0usize; workers]));
    let deals = Arc::new(Mutex::new(Vec::new()));
    let (counts2, deals2) = (Arc::clone(&counts), Arc::clone(&deals));
    let (left, right) = (fed(left), fed(right));
    timely::execute(timely::Config::process(workers), move |worker| {
        log_deals(worker, Arc::clone(&deals2));
        let mut facts = InputSession::<u64, (u8, u16), isize>::new();
        let mut table = InputSession::<u64, (u8, u16), isize>::new();
        let (me, counts) = (worker.index(), Arc::clone(&counts2));
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let (probe, _) = facts
                .to_collection(scope)
                .skew_join(table.to_collection(scope))
                .inspect(move |(_, time, _)| {
                    if *time == at {
                        counts.lock().unwrap()[me] += 1;
                    }
                })
                .probe();
            probe
        });
        feed_in_turns(worker, vec![(facts, &left[..]), (table, &right[..])], &probe);
    })
    .expect("timely runs");
    let counts = counts.lock().unwrap().clone();
    let deals = deals.lock().unwrap().clone();
    (counts, deals)
}

#[test]
fn a_hot_keys_row_renamed_costs_output_on_its_workers_only() {
    // Key 0 takes 4 facts in 5 from time 0 on, before anyone knows it is
    // hot; at time 6 its table row is renamed, and every fact of it alive
    // is joined anew.
    let mut left = Vec::new();
    for time in 0..4u64 {
        for i in 0..2_500u16 {
            let key = if i % 5 == 0 { 1 + (i / 5 % 7) as u8 } else { 0 };
            left.push((key, i ^ ((time as u16) << 12), time, 1));
        }
    }
    let mut right: Updates = (0..8u8).map(|key| (key, u16::from(key), 0, 1)).collect();
    right.extend([(0, 0, 6, -1), (0, 99, 6, 1), (0, 0, 7, 0)]);
    let workers = 4;
    let found = mismatches(workers, left.clone(), right.clone(), Skew::default());
    assert_eq!(found.mismatched, 0);
    let (counts, deals) = output_at(workers, left, right, 6);
    let total: usize = counts.iter().sum();
    assert_eq!(total, 2 * 4 * 2_000, "every fact of key 0 joined anew: {counts:?}");
    // Each worker's output of the rename is its share of key 0's latest
    // deal (give or take the hash's spread), whatever it held before:
    // none is left on the owner, which held every fact of time 0.
    let route = 0u8.hashed();
    let latest = deals
        .iter()
        .rev()
        .find(|(key, ..)| *key == route)
        .expect("key 0 turned hot");
    for (worker, &count) in counts.iter().enumerate() {
        let share = latest
            .1
            .iter()
            .position(|&w| w == worker)
            .map_or(0.0, |at| latest.2[at]);
        let measured = count as f64 / total as f64;
        assert!(
            (measured - share).abs() < 0.05,
            "worker {worker}: {measured:.3} of the output, {share:.3} of the deal ({counts:?}, {latest:?})"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn random_collections_join_as_join_does(
        workers in 1usize..=4,
        hot in prop::collection::vec(0u8..4, 1..6),
        per_time in 1usize..120,
        retract_every in 1usize..5,
        extra_right in prop::collection::vec((0u8..8, 0u16..4, 0u64..6, prop_oneof![Just(1isize), Just(-1), Just(2)]), 0..30),
        hot_share in prop_oneof![Just(0.05f64), Just(0.5), Just(1.0)],
        tolerance in prop_oneof![Just(0.0f64), Just(0.05)],
    ) {
        let (left, mut right) = skewed(&hot, per_time, retract_every);
        right.extend(extra_right);
        let skew = Skew::default()
            .with_min_updates(1)
            .unwrap()
            .with_hot_share(hot_share)
            .unwrap()
            .with_tolerance(tolerance)
            .unwrap();
        prop_assert_eq!(mismatches(workers, left, right, skew).mismatched, 0);
    }
}

/// The updates `skew_join` logged as sent (`SkewEvent::Routed`), summed
/// over every worker of `workers`, for facts of one time (key 0 half of
/// them) joined with a table of one row per key.
fn logged_sent(workers: usize, facts: u64, rows: u64) -> u64 {
    let sent = Arc::new(Mutex::new(0u64));
    let logged = Arc::clone(&sent);
    timely::execute(timely::Config::process(workers), move |worker| {
        let sent = Arc::clone(&logged);
        worker
            .log_register()
            .expect("a registry")
            .insert::<SkewEventBuilder, _>(LOG_NAME, move |_, events| {
                for (_, event) in events.iter().flat_map(|events| events.iter()) {
                    if let SkewEvent::Routed { sent: to, .. } = event {
                        *sent.lock().unwrap() += to.iter().sum::<u64>();
                    }
                }
            });
        let first = worker.index() == 0;
        worker.dataflow::<u64, _, _>(|scope| {
            let facts = (0..facts)
                .filter(move |_| first)
                .map(move |i| (if i % 2 == 0 { 0 } else { i % rows }, i));
            let table = (0..rows).filter(move |_| first).map(|key| (key, key));
            let (facts, table) = (scope.new_collection_from(facts).1, scope.new_collection_from(table).1);
            facts.skew_join(table);
        });
        while worker.step() {}
    })
    .unwrap();
    *sent.lock().unwrap()
}

#[test]
fn every_update_a_join_sends_is_logged_the_last_times_included() {
    // Nothing but one time: everything is sent after the hot keys of that
    // time are learned, as the dataflow ends.
    for workers in [2, 3] {
        let (facts, rows) = (20_000, 100);
        let sent = logged_sent(workers, facts, rows);
        // Every fact and row once, and key 0's row copied to the other
        // workers its facts are dealt to.
        let most = facts + rows + workers as u64 - 1;
        assert!(
            (facts + rows..=most).contains(&sent),
            "{workers} workers: {sent} logged, {} to {most} sent",
            facts + rows
        );
    }
}
