//! `skew_join`, `skew_semijoin` and `skew_antijoin` against differential's
//! own `join`, `semijoin` and `antijoin`: random collections with
//! insertions and retractions over several times, keys turning hot at
//! different times, at 1 to 4 workers; the consolidated difference of each
//! pair of outputs must be empty at every time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use differential_dataflow::input::InputSession;
use differential_dataflow::VecCollection;
use equipoise::skew::{Skew, SkewEvent, SkewEventBuilder, SkewJoin, SKEW_LOG_NAME};
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
    deals: Vec<(u64, Vec<usize>, usize)>,
}

fn mismatches(workers: usize, left: Updates, right: Updates, skew: Skew) -> Found {
    let found = Arc::new(Mutex::new((0usize, 0usize)));
    let found2 = Arc::clone(&found);
    let deals = Arc::new(Mutex::new(Vec::new()));
    let deals2 = Arc::clone(&deals);
    // As (record, time, diff), the form the inputs are fed in.
    let records = |updates: Updates| -> Vec<_> {
        updates
            .into_iter()
            .map(|(key, value, at, diff)| ((key, value), at, diff))
            .collect()
    };
    let (left, right) = (Arc::new(records(left)), Arc::new(records(right)));
    timely::execute(timely::Config::process(workers), move |worker| {
        let deals = Arc::clone(&deals2);
        // The join, semijoin and antijoin all log here.
        worker
            .log_register()
            .expect("a registry")
            .insert::<SkewEventBuilder, _>(SKEW_LOG_NAME, move |_, events| {
                for (_, event) in events.iter().flat_map(|events| events.iter()) {
                    if let SkewEvent::Hot { key, workers, side, .. } = event {
                        deals.lock().unwrap().push((*key, workers.clone(), *side));
                    }
                }
            });
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
            workers == 1 || found.deals.iter().any(|(_, dealt, _)| dealt.len() > 1),
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
                found.deals.iter().any(|deal| deal.2 == side && deal.1.len() > 1),
                workers > 1,
                "{workers} workers: {:?}",
                found.deals
            );
        }
    }
}

#[test]
fn a_key_dealt_anew_as_its_load_grows_joins_as_join_does() {
    // Key 0's facts double every time: it is dealt anew as its load doubles.
    let mut left = Vec::new();
    for time in 0..7u64 {
        for i in 0..(20usize << time) {
            let key = if i % 4 == 0 { (i % 5) as u8 + 1 } else { 0 };
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
        for (key, _, _) in &found.deals {
            *deals.entry(*key).or_default() += 1;
        }
        assert!(
            deals.values().any(|&count| count > 1),
            "{workers} workers: {:?}",
            found.deals
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
