//! Two-phase aggregation against independent references: `pkg_count_running` and
//! `top_k` against a HashMap count, a word count under every grouping
//! against a HashMap count (and each key on no more workers than its
//! grouping allows), the differential `pkg_count_with` under every grouping
//! against differential's own `count()`, at 1, 2, 3 and 4 workers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use differential_dataflow::input::InputSession;
use equipoise::common::hash::key_hash;
use equipoise::pkg::sim::top_of;
use equipoise::pkg::{
    Aggregate, Grouped, MergePartials, PartialKeyGrouping, PkgCount, PkgCountCollection, Scheme, SlackScheme, TopK,
};
use equipoise::skew::SkewReduce;
use equipoise_lab::common::keys::{key_name, KeySampler, KeySpec};
use proptest::prelude::*;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::operators::vec::{Input, Map};
use timely::dataflow::operators::{Inspect, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};

/// Records as (epoch, key); each worker sends the records whose position is
/// congruent to its index.
type Records = Vec<(u64, u16)>;

/// Sends this worker's share of `records` (epoch, record), those whose
/// position is congruent to its index, then closes `input` and steps until
/// `probe` is done.
fn send_dealt<D: Clone + 'static>(
    worker: &mut timely::worker::Worker,
    mut input: InputHandle<u64, CapacityContainerBuilder<Vec<D>>>,
    records: &[(u64, D)],
    probe: &ProbeHandle<u64>,
) {
    let (index, peers) = (worker.index(), worker.peers());
    for (epoch, record) in records.iter().skip(index).step_by(peers) {
        input.advance_to(*epoch);
        input.send(record.clone());
    }
    input.close();
    while !probe.done() {
        worker.step();
    }
}

/// Final count of each key and the last top-k list, from a `workers`-worker run.
fn run_count(workers: usize, records: Records, k: usize) -> (HashMap<u16, u64>, Vec<(u16, u64)>) {
    let latest = Arc::new(Mutex::new(HashMap::<u16, (u64, u64)>::new()));
    let tops = Arc::new(Mutex::new(Vec::<(u64, Vec<(u16, u64)>)>::new()));
    let (latest2, tops2) = (Arc::clone(&latest), Arc::clone(&tops));
    let records = Arc::new(records);
    timely::execute(timely::Config::process(workers), move |worker| {
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
        send_dealt(worker, input, &records, &probe);
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
            send_dealt(worker, input, &records2, &probe);
        })
        .unwrap();
        assert_eq!(*seen.lock().unwrap(), expected, "{workers} workers");
    }
}

/// Differences between `skew_count` (or `pkg_count_with` by `scheme`) and
/// `count` (should be none), and how many updates `count` produced (so the
/// comparison is not vacuous).
fn differential_mismatch(
    workers: usize,
    scheme: Option<SlackScheme>,
    updates: Vec<(u32, u64, isize)>,
) -> (usize, usize) {
    let mismatches = Arc::new(Mutex::new(0usize));
    let produced = Arc::new(Mutex::new(0usize));
    let (mismatches2, produced2) = (Arc::clone(&mismatches), Arc::clone(&produced));
    let updates = Arc::new(updates);
    timely::execute(timely::Config::process(workers), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let mut input = InputSession::<u64, u32, isize>::new();
        let (mismatches, produced) = (Arc::clone(&mismatches2), Arc::clone(&produced2));
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let collection = input.to_collection(scope);
            let expected = collection
                .clone()
                .count()
                .inspect(move |_| *produced.lock().unwrap() += 1);
            let counts = match scheme {
                None => collection.skew_count(),
                Some(scheme) => collection.pkg_count_with(scheme, |key: &u32| key_hash(key)),
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
        updates in prop::collection::vec((0u32..6, 0u64..5, prop_oneof![2 => Just(1isize), 1 => Just(-1isize)]), 1..200)
    ) {
        let mut updates = updates;
        updates.sort_by_key(|&(_, time, _)| time);
        // Updates that cancel at every time leave `count()` nothing to
        // compare against: such an input tests nothing.
        let mut net = HashMap::<(u32, u64), isize>::new();
        for &(key, time, diff) in &updates {
            *net.entry((key, time)).or_default() += diff;
        }
        prop_assume!(net.values().any(|&diff| diff != 0));
        for workers in 1..=4 {
            for scheme in [None, Some(Scheme::DChoices.with_slack(0)), Some(Scheme::WChoices.with_slack(0))] {
                let (mismatches, produced) = differential_mismatch(workers, scheme, updates.clone());
                prop_assert_eq!(mismatches, 0, "{} workers, {:?}", workers, scheme);
                prop_assert!(produced > 0);
            }
        }
    }
}

/// A windowed collection of Zipf-2.0 keys over 5 000 (the hottest, p ≈ 0.61,
/// a head key at 4 workers): `per_epoch` inserts at each of 6 epochs, each
/// retracted two epochs later.
fn windowed(per_epoch: u64) -> Vec<(u32, u64, isize)> {
    let sampler = KeySampler::new(&"zipf:2.0:5000".parse::<KeySpec>().unwrap(), 7);
    let inserted = |epoch: u64| (epoch * per_epoch..(epoch + 1) * per_epoch).map(|i| sampler.rank(i) as u32);
    let mut updates = Vec::new();
    for epoch in 0..6 {
        updates.extend(inserted(epoch).map(|key| (key, epoch, 1)));
        if epoch >= 2 {
            updates.extend(inserted(epoch - 2).map(|key| (key, epoch, -1)));
        }
    }
    updates
}

#[test]
fn differential_pkg_count_with_counts_as_count_under_every_grouping() {
    let updates = windowed(5_000);
    for workers in 1..=4 {
        for scheme in Scheme::ALL {
            for slack in [0, 64] {
                let (mismatches, produced) =
                    differential_mismatch(workers, Some(scheme.with_slack(slack)), updates.clone());
                assert_eq!(mismatches, 0, "{scheme}, slack {slack}, {workers} workers");
                assert!(produced > 100, "{produced} counts");
            }
        }
    }
}

/// What a word count under `scheme` at `workers` workers saw: each word's
/// final count, the last top 5, the records each worker folded, and how
/// many workers held a partial count of each word.
struct WordCount {
    counts: HashMap<String, u64>,
    top: Vec<(String, u64)>,
    received: Vec<u64>,
    replication: HashMap<String, usize>,
}

/// Counts `words` (each worker sending every `workers`-th, 1 000 an epoch)
/// with the two phases written out, as a program that also wants each
/// worker's load writes them.
fn word_count(workers: usize, scheme: Scheme, words: Arc<Vec<(u64, String)>>) -> WordCount {
    let finals = Arc::new(Mutex::new(HashMap::new()));
    let top = Arc::new(Mutex::new(Vec::new()));
    let received = Arc::new(Mutex::new(vec![0u64; workers]));
    let holders = Arc::new(Mutex::new(HashMap::<String, std::collections::HashSet<usize>>::new()));
    let shared = (
        Arc::clone(&finals),
        Arc::clone(&top),
        Arc::clone(&received),
        Arc::clone(&holders),
    );
    timely::execute(timely::Config::process(workers), move |worker| {
        let index = worker.index();
        let (finals, top, received, holders) = shared.clone();
        let mut input = InputHandle::new();
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let pact = Grouped::with_grouping(scheme, |(word, ()): &(String, ())| key_hash(word));
            let counts = scope
                .input_from(&mut input)
                .map(|word| (word, ()))
                .pkg_partials(pact, move |count: &mut u64, ()| {
                    *count += 1;
                    received.lock().unwrap()[index] += 1;
                })
                .inspect(move |(word, _)| {
                    holders.lock().unwrap().entry(word.clone()).or_default().insert(index);
                })
                .pkg_merge_running(|count, other| *count += other);
            counts
                .clone()
                .inspect(move |(word, count)| {
                    finals.lock().unwrap().insert(word.clone(), *count);
                })
                .top_k(5)
                .inspect(move |list| *top.lock().unwrap() = list.clone())
                .probe()
                .0
        });
        send_dealt(worker, input, &words, &probe);
    })
    .unwrap();
    let replication = holders
        .lock()
        .unwrap()
        .iter()
        .map(|(word, at)| (word.clone(), at.len()))
        .collect();
    let (counts, top, received) = (
        finals.lock().unwrap().clone(),
        top.lock().unwrap().clone(),
        received.lock().unwrap().clone(),
    );
    WordCount {
        counts,
        top,
        received,
        replication,
    }
}

/// `records` words of a Zipf 1.3 law over 2 000 (the hottest ~27 %), as
/// (epoch, word), 1 000 an epoch.
fn words(records: u64) -> Arc<Vec<(u64, String)>> {
    let sampler = KeySampler::new(&"zipf:1.3:2000".parse::<KeySpec>().unwrap(), 5);
    Arc::new((0..records).map(|i| (i / 1_000, key_name(sampler.rank(i)))).collect())
}

#[test]
fn a_word_count_under_every_grouping_counts_as_a_hashmap_and_spreads_keys_as_its_grouping_allows() {
    let words = words(30_000);
    let mut expected = HashMap::<String, u64>::new();
    for (_, word) in words.iter() {
        *expected.entry(word.clone()).or_default() += 1;
    }
    let expected_top = top_of(expected.iter().map(|(word, &count)| (word.clone(), count)).collect(), 5);
    for workers in 1..=4 {
        for scheme in Scheme::ALL {
            let run = word_count(workers, scheme, Arc::clone(&words));
            let context = format!("{scheme} at {workers} workers");
            assert_eq!(run.counts, expected, "{context}");
            assert_eq!(run.top, expected_top, "{context}");
            assert_eq!(run.received.iter().sum::<u64>(), 30_000, "{context}");
            let most = match scheme {
                Scheme::Key => 1,
                Scheme::Shuffle | Scheme::DChoices | Scheme::WChoices => workers,
                Scheme::Potc | Scheme::Pkg => 2.min(workers),
            };
            let widest = run.replication.values().copied().max().unwrap();
            assert!(widest <= most, "{context}: a word on {widest} workers");
        }
    }
}

#[test]
fn pkg_balances_a_word_count_where_key_grouping_does_not() {
    let words = words(60_000);
    let busiest_over_mean = |scheme| {
        let received = word_count(3, scheme, Arc::clone(&words)).received;
        *received.iter().max().unwrap() as f64 * 3.0 / received.iter().sum::<u64>() as f64
    };
    let (key, pkg) = (busiest_over_mean(Scheme::Key), busiest_over_mean(Scheme::Pkg));
    assert!(key > 1.3, "key grouping {key}");
    assert!(pkg < 1.05, "pkg {pkg}");
}
