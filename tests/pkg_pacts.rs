//! The pacts in running dataflows: PKG's behaviour for one key (Storm's
//! behaviour), the candidate bound, and send counts against what arrived.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use equipoise::common::hash::{key_hash, splitmix64};
use equipoise::pkg::sim::two_choices;
use equipoise::pkg::sim::{Grouping, Router};
use equipoise::pkg::{Grouped, PartialKeyGrouping, Scheme};
use timely::dataflow::channels::pact::ParallelizationContract;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::{Inspect, Probe};
use timely::dataflow::{InputHandle, StreamVec};

/// Receives `stream` through `pact` and passes each record on with the
/// index of the worker that received it.
fn receive_tagged<'s, D, P>(stream: StreamVec<'s, u64, D>, pact: P, index: usize) -> StreamVec<'s, u64, (D, usize)>
where
    D: Clone + 'static,
    P: ParallelizationContract<u64, Vec<D>>,
{
    stream
        .unary(pact, "Receive", move |_, _| {
            move |input, output| {
                input.for_each_stamp(|cap, data| {
                    let mut session = output.session(&cap);
                    for batch in data {
                        session.give_iterator(batch.drain(..).map(|record| (record, index)));
                    }
                });
            }
        })
        .container::<Vec<(D, usize)>>()
}

/// Runs `records` (sent from every worker, `copies` times) through a pact of
/// `scheme` at `workers` workers. Returns, per (sender, receiver), the records
/// of each key, and each sender's send counts.
#[allow(clippy::type_complexity)]
fn route(
    workers: usize,
    scheme: Scheme,
    keys: Vec<u64>,
    copies: usize,
) -> (HashMap<u64, Vec<(usize, usize)>>, Vec<Vec<u64>>) {
    let arrivals = Arc::new(Mutex::new(HashMap::<u64, Vec<(usize, usize)>>::new()));
    let counts = Arc::new(Mutex::new(vec![Vec::new(); workers]));
    let (arrivals2, counts2) = (Arc::clone(&arrivals), Arc::clone(&counts));
    timely::execute(timely::Config::process(workers), move |worker| {
        let index = worker.index();
        let mut input = InputHandle::new();
        let pact = Grouped::with_grouping(scheme, |(key, _sender): &(u64, usize)| key_hash(key));
        let sent = pact.send_counts();
        let arrivals = Arc::clone(&arrivals2);
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let (probe, _) = receive_tagged(scope.input_from(&mut input), pact, index)
                .inspect(move |&((key, sender), receiver)| {
                    arrivals
                        .lock()
                        .unwrap()
                        .entry(key)
                        .or_default()
                        .push((sender, receiver));
                })
                .probe();
            probe
        });
        for _ in 0..copies {
            for &key in &keys {
                input.send((key, index));
            }
        }
        input.close();
        while !probe.done() {
            worker.step();
        }
        counts2.lock().unwrap()[index] = sent.get();
    })
    .unwrap();
    let arrivals = Arc::try_unwrap(arrivals).unwrap().into_inner().unwrap();
    let counts = Arc::try_unwrap(counts).unwrap().into_inner().unwrap();
    (arrivals, counts)
}

#[test]
fn one_key_alternates_between_its_two_candidates_on_every_worker() {
    for workers in 2..=4 {
        let key = 42u64;
        let candidates = two_choices(key_hash(&key), workers);
        let (arrivals, counts) = route(workers, Scheme::Pkg, vec![key], 10);
        let arrivals = &arrivals[&key];
        assert_eq!(arrivals.len(), 10 * workers);
        // Never a third worker, and the same pair for every sender.
        let receivers: BTreeSet<usize> = arrivals.iter().map(|&(_, receiver)| receiver).collect();
        assert_eq!(
            receivers,
            candidates.into_iter().collect::<BTreeSet<_>>(),
            "{workers} workers"
        );
        // Equal local loads: each sender alternates, so splits its 10 sends 5/5.
        for (sender, sent) in counts.iter().enumerate() {
            assert_eq!(sent[candidates[0]], 5, "sender {sender} of {workers}");
            assert_eq!(sent[candidates[1]], 5, "sender {sender} of {workers}");
            assert_eq!(sent.iter().sum::<u64>(), 10);
        }
    }
}

#[test]
fn send_counts_match_arrivals_and_key_spread_matches_the_scheme() {
    let keys: Vec<u64> = (0..200).collect();
    for workers in 1..=4 {
        for scheme in Scheme::ALL {
            let (arrivals, counts) = route(workers, scheme, keys.clone(), 3);
            // Counts per (sender, receiver) pair equal the arrivals.
            let mut arrived = vec![vec![0u64; workers]; workers];
            for pairs in arrivals.values() {
                for &(sender, receiver) in pairs {
                    arrived[sender][receiver] += 1;
                }
            }
            assert_eq!(arrived, counts, "{scheme} at {workers} workers");
            for (key, pairs) in &arrivals {
                assert_eq!(pairs.len(), 3 * workers, "{scheme}: key {key} lost or duplicated");
                let receivers: BTreeSet<usize> = pairs.iter().map(|&(_, receiver)| receiver).collect();
                let candidates: BTreeSet<usize> = two_choices(key_hash(key), workers).into_iter().collect();
                match scheme {
                    Scheme::Key => assert_eq!(receivers.len(), 1),
                    // PoTC never splits a key within one sender.
                    Scheme::Potc => {
                        assert!(receivers.is_subset(&candidates));
                        for sender in 0..workers {
                            let mine: BTreeSet<usize> = pairs.iter().filter(|p| p.0 == sender).map(|p| p.1).collect();
                            assert_eq!(mine.len(), 1);
                        }
                    }
                    Scheme::Pkg => assert!(receivers.is_subset(&candidates)),
                    // Uniform keys (200 keys, at most 12 messages per
                    // sender) have no head: each key stays on its two.
                    Scheme::DChoices | Scheme::WChoices => assert!(receivers.is_subset(&candidates)),
                    Scheme::Shuffle => {}
                }
            }
        }
    }
}

#[test]
fn pkg_pact_is_usable_as_a_plain_timely_pact() {
    // The pact, with a cost function, in timely's own `sink` at 2 workers:
    // every record arrives once, and both workers receive some.
    let received = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&received);
    timely::execute(timely::Config::process(2), move |worker| {
        let seen = Arc::clone(&seen);
        let me = worker.index();
        worker.dataflow::<u64, _, _>(|scope| {
            use timely::dataflow::operators::ToStream;
            let pact = PartialKeyGrouping::new(|x: &u64| key_hash(x)).with_cost(|x: &u64| x % 3 + 1);
            let records = if me == 0 { 0..1000u64 } else { 0..0 };
            records.to_stream(scope).sink(pact, "Sink", move |(input, _frontier)| {
                input.for_each(|_, data| seen.lock().unwrap().extend(data.drain(..).map(|x| (me, x))));
            });
        });
    })
    .unwrap();
    let mut received = received.lock().unwrap().clone();
    let workers: BTreeSet<usize> = received.iter().map(|&(worker, _)| worker).collect();
    assert_eq!(workers.len(), 2, "both workers receive records");
    received.sort_by_key(|&(_, x)| x);
    let values: Vec<u64> = received.into_iter().map(|(_, x)| x).collect();
    assert_eq!(values, (0..1000).collect::<Vec<_>>());
}

/// Every record's destination in a running dataflow equals what the
/// policy's own router gives that sender's stream routed one record at a
/// time: the pact's batch paths (one loop at two workers, a whole batch
/// routed before any record moves beyond two) decide exactly as the plain
/// router does, with and without a cost function, across many batches.
#[test]
fn pacts_route_each_record_as_the_router_routes_it_alone() {
    let per_sender = 30_000u64;
    // A third of each stream is one key, so D-/W-Choices find a head and
    // spread it; the rest is 500 keys.
    let key_of = |sender: usize, seq: u64| {
        if seq.is_multiple_of(3) {
            0
        } else {
            splitmix64(seq ^ (sender as u64) << 40) % 500
        }
    };
    let cost_of = |seq: u64| 1 + seq % 3;
    let groupings = [
        Scheme::Pkg.with_slack(0),
        Scheme::Pkg.with_slack(16),
        Scheme::DChoices.with_slack(0),
        Scheme::WChoices.with_slack(4),
        Scheme::Key.with_slack(0),
    ];
    for workers in 1..=4 {
        for grouping in groupings {
            for weighted in [false, true] {
                let arrivals = Arc::new(Mutex::new(Vec::<(usize, u64, usize)>::new()));
                let sink = Arc::clone(&arrivals);
                timely::execute(timely::Config::process(workers), move |worker| {
                    let index = worker.index();
                    let mut input = InputHandle::new();
                    let key = |&(key, _, _): &(u64, usize, u64)| key_hash(&key);
                    let pact = Grouped::with_grouping(grouping, key);
                    let pact = if weighted {
                        pact.with_cost(move |&(_, _, seq): &(u64, usize, u64)| cost_of(seq))
                    } else {
                        pact
                    };
                    let arrivals = Arc::clone(&sink);
                    let probe = worker.dataflow::<u64, _, _>(|scope| {
                        let (probe, _) = receive_tagged(scope.input_from(&mut input), pact, index)
                            .inspect(move |&((_, sender, seq), receiver)| {
                                arrivals.lock().unwrap().push((sender, seq, receiver))
                            })
                            .probe();
                        probe
                    });
                    for seq in 0..per_sender {
                        input.send((key_of(index, seq), index, seq));
                        // Many batches and stamps.
                        if seq % 1000 == 999 {
                            input.advance_to(seq / 1000 + 1);
                        }
                    }
                    input.close();
                    while !probe.done() {
                        worker.step();
                    }
                })
                .unwrap();
                let mut arrivals = Arc::try_unwrap(arrivals).unwrap().into_inner().unwrap();
                arrivals.sort();
                assert_eq!(arrivals.len() as u64, per_sender * workers as u64);
                for (sender, routed) in arrivals.chunks(per_sender as usize).enumerate() {
                    let mut router = grouping.router(workers, sender);
                    for (seq, &(from, at, to)) in routed.iter().enumerate() {
                        let seq = seq as u64;
                        assert_eq!((from, at), (sender, seq), "a record lost or duplicated");
                        let cost = if weighted { cost_of(seq) } else { 1 };
                        let expected = router.route(key_hash(&key_of(sender, seq)), cost);
                        assert_eq!(
                            to, expected,
                            "{:?} at {workers} workers, weighted {weighted}: sender {sender}, record {seq}",
                            grouping
                        );
                    }
                }
            }
        }
    }
}

/// The pacts' log at 1, 2 and 4 workers: each sender's period events add up
/// to what each receiver received (counted by the receiving operator), and
/// under D-Choices at 4 workers a key with 60 % of the stream shows up in
/// the logged head with every worker; at 2 workers or one there is no head.
#[test]
fn logged_periods_add_up_to_the_arrivals_and_the_head_names_the_hot_key() {
    use equipoise::pkg::events::{PkgEvent, PkgEventBuilder};
    use equipoise::pkg::LOG_NAME;
    use std::time::Duration;

    const HOT: u64 = 7;
    for workers in [1, 2, 4] {
        let events = Arc::new(Mutex::new(Vec::<PkgEvent>::new()));
        let received = Arc::new(Mutex::new(vec![0u64; workers]));
        let (events2, received2) = (Arc::clone(&events), Arc::clone(&received));
        timely::execute(timely::Config::process(workers), move |worker| {
            let index = worker.index();
            let sink = Arc::clone(&events2);
            worker
                .log_register()
                .expect("a log registry")
                .insert::<PkgEventBuilder, _>(LOG_NAME, move |_time, batch| {
                    if let Some(batch) = batch {
                        sink.lock().unwrap().extend(batch.drain(..).map(|(_, event)| event));
                    }
                });
            let mut input = InputHandle::new();
            let received = Arc::clone(&received2);
            let probe = worker.dataflow::<u64, _, _>(|scope| {
                let pact = Grouped::d_choices(|key: &u64| key_hash(key)).with_log_period(Duration::from_millis(1));
                let (probe, _) = receive_tagged(scope.input_from(&mut input), pact, index)
                    .inspect(move |&(_, receiver)| received.lock().unwrap()[receiver] += 1)
                    .probe();
                probe
            });
            for round in 0..200u64 {
                for i in 0..1_000u64 {
                    let n = splitmix64((index as u64) << 32 | (round * 1_000 + i));
                    input.send(if n % 10 < 6 { HOT } else { n % 100_000 });
                }
                input.advance_to(round + 1);
                while probe.less_than(input.time()) {
                    worker.step();
                }
            }
        })
        .unwrap();
        let events = events.lock().unwrap();
        let mut logged = vec![0u64; workers];
        let mut senders = BTreeSet::new();
        for event in events.iter() {
            if let PkgEvent::Period {
                worker,
                sent,
                imbalance,
                imbalance_fraction,
                ..
            } = event
            {
                senders.insert(*worker);
                assert_eq!(sent.len(), workers);
                for (total, sent) in logged.iter_mut().zip(sent) {
                    *total += sent;
                }
                let (max, records) = (*sent.iter().max().unwrap(), sent.iter().sum::<u64>());
                assert!((imbalance - (max as f64 - records as f64 / workers as f64)).abs() < 1e-9);
                assert!((0.0..=1.0).contains(imbalance_fraction));
            }
        }
        assert_eq!(senders.len(), workers, "every sender logs its periods");
        assert_eq!(logged, *received.lock().unwrap(), "{workers} workers");
        assert_eq!(logged.iter().sum::<u64>(), 200_000 * workers as u64);
        let heads: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                PkgEvent::Head { keys, choices, .. } => Some((keys.clone(), *choices)),
                _ => None,
            })
            .collect();
        if workers == 4 {
            assert!(
                heads
                    .iter()
                    .any(|(keys, _)| keys.iter().any(|head| head.key == key_hash(&HOT) && head.workers == 4)),
                "{heads:?}"
            );
        } else {
            // At two workers or one D-Choices is PKG: no head.
            assert!(heads.is_empty(), "{heads:?}");
        }
    }
}
