//! `skew_count`, `skew_distinct` and `pkg_count` against differential's own
//! `count` and `distinct`: skewed collections with insertions and
//! retractions over several times, hot keys changing, at 1 to 4 workers;
//! the consolidated difference of each pair of outputs must be empty at
//! every time, and the hot keys must have been combined.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use differential_dataflow::input::InputSession;
use differential_dataflow::Hashable;
use equipoise::pkg::{PkgCountCollection, SkewEvent, SkewEventBuilder, SkewReduce, SKEW_LOG_NAME};
use proptest::prelude::*;

/// Updates as (key, time, diff).
type Updates = Vec<(u32, u64, isize)>;

/// What a run found: mismatched updates (should be none), the updates
/// `count` produced (so that the comparison is not vacuous), and the keys
/// some worker combined (by their route hash).
struct Found {
    mismatched: usize,
    produced: usize,
    combined: BTreeSet<u64>,
}

fn mismatches(workers: usize, updates: Updates) -> Found {
    let found = Arc::new(Mutex::new((0usize, 0usize)));
    let combined = Arc::new(Mutex::new(BTreeSet::new()));
    let (found2, combined2) = (Arc::clone(&found), Arc::clone(&combined));
    let updates = Arc::new(updates);
    timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let combined = Arc::clone(&combined2);
        worker
            .log_register()
            .expect("a registry")
            .insert::<SkewEventBuilder, _>(SKEW_LOG_NAME, move |_, events| {
                for (_, event) in events.iter().flat_map(|events| events.iter()) {
                    if let SkewEvent::Combined { keys, .. } = event {
                        combined.lock().unwrap().extend(keys.iter().copied());
                    }
                }
            });
        let mut input = InputSession::<u64, u32, isize>::new();
        let (found, found2) = (Arc::clone(&found2), Arc::clone(&found2));
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let keys = input.to_collection(scope);
            let counted = keys.clone().count().inspect(move |_| found2.lock().unwrap().1 += 1);
            let counts = keys
                .clone()
                .skew_count()
                .negate()
                .concat(counted.clone())
                .concat(keys.clone().pkg_count().negate())
                .concat(counted);
            let distinct = keys.clone().skew_distinct().negate().concat(keys.distinct());
            let (probe, _) = counts
                .map(|(key, count)| (0u8, key, count as i64))
                .concat(distinct.map(|key| (1, key, 0)))
                .consolidate()
                .inspect(move |update| {
                    eprintln!("mismatch: {update:?}");
                    found.lock().unwrap().0 += 1;
                })
                .probe();
            probe
        });
        let last = updates.iter().map(|u| u.1).max().unwrap_or(0);
        for time in 0..=last {
            input.advance_to(time);
            for (position, &(key, at, diff)) in updates.iter().enumerate() {
                if at == time && position % peers == index {
                    input.update(key, diff);
                }
            }
            input.advance_to(time + 1);
            input.flush();
            worker.step_while(|| probe.less_than(input.time()) && time % 2 == 0);
        }
        input.close();
        while !probe.done() {
            worker.step();
        }
    })
    .expect("timely runs");
    let (mismatched, produced) = *found.lock().unwrap();
    let combined = combined.lock().unwrap().clone();
    Found {
        mismatched,
        produced,
        combined,
    }
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
                found.combined.contains(&route(hot)),
                "{workers} workers: key {hot} never combined"
            );
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
        prop_assert!(found.combined.contains(&route(0)));
    }
}
