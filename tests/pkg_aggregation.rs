//! Two-phase aggregation against independent references: `pkg_count_running` and
//! `top_k` against a HashMap count, the differential `pkg_count_with` against
//! differential's own `count()`, at 1, 2, 3 and 4 workers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use differential_dataflow::input::InputSession;
use equipoise::common::hash::key_hash;
use equipoise::pkg::sim::top_of;
use equipoise::pkg::{Aggregate, PartialKeyGrouping, PkgCount, PkgCountCollection, Scheme, TopK};
use equipoise::skew::SkewReduce;
use proptest::prelude::*;
use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::{Inspect, Probe};
use timely::dataflow::InputHandle;

/// Records as (epoch, key); each worker sends the records whose position is
/// congruent to its index.
type Records = Vec<(u64, u16)>;

/// Final count of each key and the last top-k list, from a `workers`-worker run.
fn run_count(workers: usize, records: Records, k: usize) -> (HashMap<u16, u64>, Vec<(u16, u64)>) {
    let latest = Arc::new(Mutex::new(HashMap::<u16, (u64, u64)>::new()));
    let tops = Arc::new(Mutex::new(Vec::<(u64, Vec<(u16, u64)>)>::new()));
    let (latest2, tops2) = (Arc::clone(&latest), Arc::clone(&tops));
    let records = Arc::new(records);
    timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let mut input = InputHandle::new();
        let (latest, tops) = (Arc::clone(&latest2), Arc::clone(&tops2));
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let counts = scope
                .input_from(&mut input)
                .pkg_count_running(PartialKeyGrouping::new(|key: &u16| key_hash(key)));
            let (probe, _) = counts
                .clone()
                .inspect_core(move |event| {
                    if let Ok((stamp, batch)) = event {
                        let time = *stamp.least().unwrap();
                        let mut latest = latest.lock().unwrap();
                        for &(key, count) in batch {
                            let entry = latest.entry(key).or_insert((time, count));
                            assert!(entry.0 <= time, "updates of a key arrive in time order");
                            *entry = (time, count);
                        }
                    }
                })
                .top_k(k)
                .inspect_core(move |event| {
                    if let Ok((stamp, batch)) = event {
                        for top in batch {
                            tops.lock().unwrap().push((*stamp.least().unwrap(), top.clone()));
                        }
                    }
                })
                .probe();
            probe
        });
        for (position, &(epoch, key)) in records.iter().enumerate() {
            if position % peers == index {
                input.advance_to(epoch);
                input.send(key);
            }
        }
        input.close();
        while !probe.done() {
            worker.step();
        }
    })
    .unwrap();
    let counts = latest
        .lock()
        .unwrap()
        .iter()
        .map(|(&key, &(_, count))| (key, count))
        .collect();
    let mut tops = tops.lock().unwrap().clone();
    tops.sort_by_key(|(time, _)| *time);
    (counts, tops.pop().map(|(_, top)| top).unwrap_or_default())
}

fn reference(records: &Records) -> HashMap<u16, u64> {
    let mut counts = HashMap::new();
    for &(_, key) in records {
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// Sorted by epoch, as an input handle needs; skewed keys so that PKG splits.
fn records() -> impl Strategy<Value = Records> {
    prop::collection::vec((0u64..6, prop_oneof![3 => 0u16..4, 1 => 0u16..400]), 0..400).prop_map(|mut records| {
        records.sort_by_key(|&(epoch, _)| epoch);
        records
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn pkg_count_and_top_k_equal_a_hashmap_count(records in records(), k in 1usize..6) {
        let expected = reference(&records);
        let expected_top = top_of(expected.iter().map(|(&key, &count)| (key, count)).collect(), k);
        for workers in 1..=4 {
            let (counts, top) = run_count(workers, records.clone(), k);
            prop_assert_eq!(&counts, &expected, "{} workers", workers);
            prop_assert_eq!(&top, &expected_top, "{} workers", workers);
        }
    }
}

#[test]
fn pkg_aggregate_is_exact_per_time() {
    // Sums of values per key and epoch, against a HashMap, with a hot key.
    let records: Vec<(u64, (u32, u64))> = (0..3000u64).map(|i| (i / 1000, ((i % 7 / 4) as u32, i))).collect();
    let mut expected: HashMap<(u64, u32), u64> = HashMap::new();
    for &(epoch, (key, value)) in &records {
        *expected.entry((epoch, key)).or_default() += value;
    }
    for workers in 1..=4 {
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let (seen2, records2) = (Arc::clone(&seen), records.clone());
        timely::execute(timely::Config::process(workers), move |worker| {
            let (index, peers) = (worker.index(), worker.peers());
            let mut input = InputHandle::new();
            let seen = Arc::clone(&seen2);
            let probe = worker.dataflow::<u64, _, _>(|scope| {
                scope
                    .input_from(&mut input)
                    .pkg_aggregate(
                        PartialKeyGrouping::new(|(key, _): &(u32, u64)| key_hash(key)),
                        |sum: &mut u64, value| *sum += value,
                        |sum, other| *sum += other,
                    )
                    .inspect_core(move |event| {
                        if let Ok((stamp, batch)) = event {
                            for &(key, sum) in batch {
                                let previous = seen.lock().unwrap().insert((*stamp.least().unwrap(), key), sum);
                                assert!(previous.is_none(), "one aggregate per key and time");
                            }
                        }
                    })
                    .probe()
                    .0
            });
            for (position, &(epoch, record)) in records2.iter().enumerate() {
                if position % peers == index {
                    input.advance_to(epoch);
                    input.send(record);
                }
            }
            input.close();
            while !probe.done() {
                worker.step();
            }
        })
        .unwrap();
        assert_eq!(*seen.lock().unwrap(), expected, "{workers} workers");
    }
}

/// Differences between `skew_count` (or `pkg_count_with` by `scheme`) and
/// `count` (should be none), and how many updates `count` produced (so the
/// comparison is not vacuous).
fn differential_mismatch(workers: usize, scheme: Option<Scheme>, updates: Vec<(u8, u64, isize)>) -> (usize, usize) {
    let mismatches = Arc::new(Mutex::new(0usize));
    let produced = Arc::new(Mutex::new(0usize));
    let (mismatches2, produced2) = (Arc::clone(&mismatches), Arc::clone(&produced));
    let updates = Arc::new(updates);
    timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let mut input = InputSession::<u64, u8, isize>::new();
        let (mismatches, produced) = (Arc::clone(&mismatches2), Arc::clone(&produced2));
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let collection = input.to_collection(scope);
            let expected = collection
                .clone()
                .count()
                .inspect(move |_| *produced.lock().unwrap() += 1);
            let counts = match scheme {
                None => collection.skew_count(),
                Some(scheme) => collection.pkg_count_with(scheme, |key: &u8| key_hash(key)),
            };
            let (probe, _) = counts
                .negate()
                .concat(expected)
                .consolidate()
                .inspect(move |update| {
                    eprintln!("mismatch: {update:?}");
                    *mismatches.lock().unwrap() += 1;
                })
                .probe();
            probe
        });
        for (position, &(key, time, diff)) in updates.iter().enumerate() {
            if position % peers == index {
                input.advance_to(time);
                input.update(key, diff);
            }
        }
        input.close();
        while !probe.done() {
            worker.step();
        }
    })
    .unwrap();

    (*mismatches.lock().unwrap(), *produced.lock().unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn differential_pkg_count_equals_count(
        updates in prop::collection::vec((0u8..6, 0u64..5, prop_oneof![2 => Just(1isize), 1 => Just(-1isize)]), 1..200)
    ) {
        let mut updates = updates;
        updates.sort_by_key(|&(_, time, _)| time);
        for workers in 1..=4 {
            for scheme in [None, Some(Scheme::DChoices), Some(Scheme::WChoices)] {
                let (mismatches, produced) = differential_mismatch(workers, scheme, updates.clone());
                prop_assert_eq!(mismatches, 0, "{} workers, {:?}", workers, scheme);
                prop_assert!(produced > 0);
            }
        }
    }
}
