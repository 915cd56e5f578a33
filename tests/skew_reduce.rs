//! `skew_count`, `skew_distinct` against differential's own
//! `count` and `distinct`, and `skew_min`, `skew_max` and
//! `skew_reduce_associative` (the top 3, a sum) against differential's
//! `reduce` by the same logic: skewed
//! collections with insertions and retractions over several times, hot
//! keys changing, at 1 to 4 workers; the consolidated difference of each
//! pair of outputs must be empty at every time, and the hot keys must have
//! been combined (split).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use differential_dataflow::input::InputSession;
use differential_dataflow::{Hashable, VecCollection};
use equipoise::skew::{Skew, SkewAssociative, SkewEvent, SkewEventBuilder, SkewMinMax, SkewReduce, LOG_NAME};
use proptest::prelude::*;

mod support;
use support::feed::feed_in_turns;

/// Updates as (key, time, diff).
type Updates = Vec<(u32, u64, isize)>;

/// What a run found: mismatched updates (should be none), the updates
/// differential's operator produced (so that the comparison is not
/// vacuous), and the keys some worker combined or found hot (by their
/// route hash).
struct Found {
    mismatched: usize,
    produced: usize,
    hot: BTreeSet<u64>,
}

/// Feeds `updates` (record, time, diff) to `workers` workers and counts
/// the updates of `difference` (the skew-proof operators' outputs less
/// differential's, consolidated); `difference` also counts, in its second
/// argument, the updates differential's operator produced.
fn check<D, F>(workers: usize, updates: Vec<(D, u64, isize)>, difference: F) -> Found
where
    D: differential_dataflow::ExchangeData + std::hash::Hash + Sync,
    F: for<'a> Fn(
            VecCollection<'a, u64, D, isize>,
            Arc<Mutex<(usize, usize)>>,
        ) -> VecCollection<'a, u64, (u8, D, i64), isize>
        + Send
        + Sync
        + 'static,
{
    let found = Arc::new(Mutex::new((0usize, 0usize)));
    let hot = Arc::new(Mutex::new(BTreeSet::new()));
    let (found2, hot2) = (Arc::clone(&found), Arc::clone(&hot));
    let updates = Arc::new(updates);
    let difference = Arc::new(difference);
    timely::execute(timely::Config::process(workers), move |worker| {
        let hot = Arc::clone(&hot2);
        worker
            .log_register()
            .expect("a registry")
            .insert::<SkewEventBuilder, _>(LOG_NAME, move |_, events| {
                for (_, event) in events.iter().flat_map(|events| events.iter()) {
                    match event {
                        SkewEvent::Combined { keys, .. } => hot.lock().unwrap().extend(keys.iter().copied()),
                        SkewEvent::Hot { key, .. } => {
                            hot.lock().unwrap().insert(*key);
                        }
                        SkewEvent::Routed { .. } | SkewEvent::PassedOn { .. } => {}
                    }
                }
            });
        let mut input = InputSession::<u64, D, isize>::new();
        let found = Arc::clone(&found2);
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let (probe, _) = difference(input.to_collection(scope), Arc::clone(&found))
                .consolidate()
                .inspect(move |update| {
                    eprintln!("mismatch: {update:?}");
                    found.lock().unwrap().0 += 1;
                })
                .probe();
            probe
        });
        feed_in_turns(worker, vec![(input, &updates[..])], &probe);
    })
    .expect("timely runs");
    let (mismatched, produced) = *found.lock().unwrap();
    let hot = hot.lock().unwrap().clone();
    Found {
        mismatched,
        produced,
        hot,
    }
}

/// `skew_count` and `skew_distinct` against `count` and
/// `distinct`.
fn mismatches(workers: usize, updates: Updates) -> Found {
    check(workers, updates, |keys, found| {
        let counted = keys.clone().count().inspect(move |_| found.lock().unwrap().1 += 1);
        let counts = keys.clone().skew_count().negate().concat(counted);
        let distinct = keys.clone().skew_distinct().negate().concat(keys.distinct());
        counts
            .map(|(key, count)| (0u8, key, count as i64))
            .concat(distinct.map(|key| (1, key, 0)))
    })
}

/// Enough updates of a few keys (0 to 3, the first the most) that every
/// worker of four decides to combine them: at time 0.
fn warm_up() -> Updates {
    (0..400_000u32).map(|i| ((i % 7).min(3), 0, 1)).collect()
}

/// The route hash the log names a key by.
fn route(key: u32) -> u64 {
    key.hashed()
}

#[test]
fn hot_keys_are_combined_and_counts_and_distincts_match() {
    // The hot key changes every other time; some inserts are retracted two
    // times later, some more than once (negative counts).
    let mut updates = Updates::new();
    for time in 0..8u64 {
        let hot = 10 + (time / 2) as u32;
        for i in 0..60_000u32 {
            let key = if i % 2 == 0 { hot } else { 100 + i % 5_000 };
            updates.push((key, time, 1));
            if time < 6 && i % 3 == 0 {
                updates.push((key, time + 2, if i % 9 == 0 { -2 } else { -1 }));
            }
        }
    }
    for workers in 1..=4 {
        let found = mismatches(workers, updates.clone());
        assert_eq!(found.mismatched, 0, "{workers} workers");
        assert!(found.produced > 10_000, "{workers} workers: {}", found.produced);
        for hot in 10..14 {
            assert!(
                found.hot.contains(&route(hot)),
                "{workers} workers: key {hot} never combined"
            );
        }
    }
}

/// Updates of records as (key, value, time, diff).
type Records = Vec<(u32, u32, u64, isize)>;

/// The three greatest values of a key with a multiplicity above zero, each
/// with its multiplicity (at most three in all): associative, as every
/// record of a value is reduced on the same part.
fn top3(_: &u32, input: &[(&u32, isize)], output: &mut Vec<(u32, isize)>) {
    let mut left = 3;
    for &(value, count) in input.iter().rev().filter(|(_, count)| *count > 0) {
        if left == 0 {
            break;
        }
        output.push((*value, count.min(left)));
        left -= count.min(left);
    }
}

/// The sum of a key's values times their multiplicities (wrapping).
fn sum(_: &u32, input: &[(&u32, isize)], output: &mut Vec<(u32, isize)>) {
    let total = input.iter().fold(0u32, |sum, &(value, count)| {
        sum.wrapping_add(value.wrapping_mul(count as u32))
    });
    output.push((total, 1));
}

/// `skew_min`, `skew_max` and `skew_reduce_associative` (the top 3 and a
/// sum), with hot keys found by `skew` or by their default, against
/// `reduce` by the same logic.
fn two_level_mismatches(workers: usize, updates: Records, skew: Option<Skew>) -> Found {
    let updates = updates
        .into_iter()
        .map(|(key, val, time, diff)| ((key, val), time, diff))
        .collect();
    check(workers, updates, move |records, found| {
        let least = records
            .clone()
            .reduce(|_, values, out| out.push((*values[0].0, 1)))
            .inspect(move |_| found.lock().unwrap().1 += 1);
        let greatest = records
            .clone()
            .reduce(|_, values, out| out.push((*values[values.len() - 1].0, 1)));
        let tagged = |tag: u8| move |record: (u32, u32)| (tag, record, 0);
        let skew = skew.unwrap_or_default();
        let (min, max) = (records.clone().skew_min_with(skew), records.clone().skew_max_with(skew));
        let (top, summed) = (
            records.clone().skew_reduce_associative_with(skew, top3),
            records.clone().skew_reduce_associative_with(skew, sum),
        );
        min.negate()
            .concat(least)
            .map(tagged(0))
            .concat(max.negate().concat(greatest).map(tagged(1)))
            .concat(top.negate().concat(records.clone().reduce(top3)).map(tagged(2)))
            .concat(summed.negate().concat(records.reduce(sum)).map(tagged(3)))
    })
}

#[test]
fn hot_keys_are_split_and_associative_reductions_match() {
    // The hot key changes every other time (10, 11, 12, 13), and each has
    // records from time 0 on, some retracted after it turned hot; a third
    // of the inserts are retracted two times later.
    let mut updates = Records::new();
    for time in 0..8u64 {
        let hot = 10 + (time / 2) as u32;
        for i in 0..8_000u32 {
            let (key, val) = match i % 4 {
                0 | 1 => (hot, i * 7 % 5_000),
                2 => (10 + (i / 4) % 4, i),
                _ => (100 + i % 500, i),
            };
            updates.push((key, val, time, 1));
            if time < 6 && i % 3 == 0 {
                updates.push((key, val, time + 2 + u64::from(i % 5 == 0), -1));
            }
        }
    }
    for workers in 1..=4 {
        let found = two_level_mismatches(workers, updates.clone(), None);
        assert_eq!(found.mismatched, 0, "{workers} workers");
        assert!(found.produced > 100, "{workers} workers: {}", found.produced);
        if workers > 1 {
            for hot in 10..14 {
                assert!(
                    found.hot.contains(&route(hot)),
                    "{workers} workers: key {hot} never hot"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Random updates of 20 keys, with retractions, at times 1 to 6, after
    /// a warm-up that makes keys 0 to 3 combined: their random updates are
    /// summed (to zero, or negative, as it falls).
    #[test]
    fn skew_count_and_distinct_equal_count_and_distinct(
        random in prop::collection::vec((0u32..20, 1u64..7, prop_oneof![Just(1isize), Just(-1), Just(2)]), 0..400),
        workers in 1usize..=4,
    ) {
        let mut updates = warm_up();
        updates.extend(random);
        let found = mismatches(workers, updates);
        prop_assert_eq!(found.mismatched, 0);
        prop_assert!(found.produced > 0);
        prop_assert!(found.hot.contains(&route(0)));
    }

    /// Random records of 10 keys (half of them of key 0) and 30 values,
    /// with retractions, at times 0 to 6, hot at a low bar: keys turn hot
    /// with records before, and retractions meet insertions moved to their
    /// parts.
    #[test]
    fn two_level_reductions_equal_reduce(
        updates in prop::collection::vec(
            (0u32..20, 0u32..30, 0u64..7, prop_oneof![Just(1isize), Just(-1), Just(2)]),
            300..600,
        ),
        workers in 1usize..=4,
    ) {
        let updates = updates.into_iter().map(|(key, val, time, diff)| (if key >= 10 { 0 } else { key }, val, time, diff)).collect();
        let skew = Skew::default().with_hot_share(0.2).unwrap().with_min_updates(4).unwrap();
        let found = two_level_mismatches(workers, updates, Some(skew));
        prop_assert_eq!(found.mismatched, 0);
        prop_assert!(found.produced > 0);
        // (Key 0 has 150 updates or more, of which about one in 16 is counted.)
        prop_assert!(workers == 1 || found.hot.contains(&route(0)));
    }
}
