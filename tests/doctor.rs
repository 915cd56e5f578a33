//! The skew report (`equipoise::doctor`) on dataflows built in the test: a
//! count into which one key brings half the records is named, with its
//! busiest worker and the records each worker received counted by a
//! brute-force routing of the same keys; a uniform one reports every
//! operator even; a user's own operators, keys and windows are reported
//! beside its own logger; a moving hot key shows as a step in the series;
//! the page draws every operator; a D-Choices pact's heads are named; a
//! program that never registers has no logger installed. The examples'
//! `--doctor` reports, one and two processes, are tested in
//! `tests/examples/doctor.rs`.

use differential_dataflow::input::Input;
use differential_dataflow::Hashable;
use equipoise::doctor::{self, Doctor, Report, SampleKeys};
use equipoise::skew::SkewReduce;
use timely::logging::TimelyEventBuilder;
use timely::worker::Worker;

use support::feed::close_epoch;

mod support;

/// Records inserted over all workers.
const RECORDS: u64 = 40_000;

/// The report of a count (`skew_count` if `skew`) of `key(i)` for `RECORDS`
/// records, on `workers` workers, with the arrangements sized, asked for
/// twice (the second after nothing more happened).
fn count_report(workers: usize, key: fn(u64) -> u64, skew: bool) -> (Report, Report) {
    count_report_by(workers, key, skew, |worker| {
        doctor::register_with(worker, doctor::Settings::default().with_arrangements())
    })
}

/// [`count_report`], with the doctor registered by `register`.
fn count_report_by(
    workers: usize,
    key: fn(u64) -> u64,
    skew: bool,
    register: fn(&mut Worker) -> Doctor,
) -> (Report, Report) {
    let guards = timely::execute(timely::Config::process(workers), move |worker| {
        let doctor = register(worker);
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, keys) = scope.new_collection::<u64, isize>();
            if skew {
                keys.skew_count();
            } else {
                keys.count();
            }
            input
        });
        for i in (index..RECORDS).step_by(peers as usize) {
            input.insert(key(i));
        }
        input.close();
        while worker.step() {}
        let first = doctor.report(worker);
        let second = doctor.report(worker);
        first.zip(second)
    })
    .unwrap();
    at_worker_0(guards)
}

/// What worker 0 returned (the others return `None`).
fn at_worker_0<T: Send>(guards: timely::communication::WorkerGuards<Option<T>>) -> T {
    guards
        .join()
        .into_iter()
        .find_map(|result| result.unwrap())
        .expect("worker 0's report")
}

fn half_on_key_0(i: u64) -> u64 {
    if i.is_multiple_of(2) {
        0
    } else {
        i
    }
}

#[test]
fn a_key_with_half_the_records_names_the_count_its_worker_and_its_records() {
    for workers in 1..=4usize {
        let (report, again) = count_report(workers, half_on_key_0, false);
        assert_eq!(report.workers, workers);
        // Differential's exchange, by brute force: each key to its hash's worker.
        let mut expected = vec![0u64; workers];
        for i in 0..RECORDS {
            expected[(half_on_key_0(i).hashed() % workers as u64) as usize] += 1;
        }
        let count = report.operator("Arrange: Count").expect("the count's arrangement");
        assert_eq!(count.records, expected, "{workers} workers");
        let owner = (0u64.hashed() % workers as u64) as usize;
        assert_eq!(count.records_spread.busiest, owner);
        let mean = RECORDS as f64 / workers as f64;
        assert!((count.busiest_over_mean - expected[owner] as f64 / mean).abs() < 1e-9);
        if workers > 1 {
            // About (workers + 1) / 2: half the records and a share of the rest.
            assert!(
                count.busiest_over_mean > (workers as f64 + 1.0) / 2.0 - 0.1,
                "{}",
                count.busiest_over_mean
            );
            assert!(count.hint.as_deref().unwrap().contains("skew_count"));
        } else {
            assert_eq!(count.hint, None);
        }
        // Every worker's arrangement held something; none holds anything now.
        let arranged = count.arranged.as_ref().expect("an arrangement");
        assert!(arranged.iter().all(|&held| held > 0), "{arranged:?}");
        assert!(count.arranged_now.as_ref().unwrap().iter().all(|&held| held == 0));
        // The report's own dataflows are left out, and asking again changes nothing.
        assert!(report.operators.iter().all(|op| op.address[0] == 0));
        assert_eq!(again.operator("Arrange: Count").unwrap().records, expected);
        assert_eq!(again.operators.len(), report.operators.len());
    }
}

#[test]
fn uniform_keys_report_every_operator_even_and_skew_count_evens_the_skewed() {
    let (report, _) = count_report(4, |i| i, false);
    for op in report.operators.iter().filter(|op| op.records.iter().sum::<u64>() > 0) {
        assert!(
            op.records_spread.busiest_over_mean < 1.1,
            "{} {:?}",
            op.name,
            op.records
        );
        assert_eq!(op.hint, None);
    }
    let (report, _) = count_report(4, half_on_key_0, true);
    // The hot key's updates are summed before the exchange: the arrangement
    // the count reads is even, and the key is listed as hot.
    let count = report.operator("Arrange: Count").expect("the count's arrangement");
    assert!(count.busiest_over_mean < 1.2, "{:?}", count.records);
    assert!(report.hot_keys.iter().any(|(key, _)| *key == 0u64.hashed()));
}

#[test]
fn by_default_the_records_are_the_same_and_no_arrangement_is_sized() {
    let (full, _) = count_report(3, half_on_key_0, false);
    let (light, _) = count_report_by(3, half_on_key_0, false, doctor::register);
    let (full, light) = (
        full.operator("Arrange: Count").unwrap(),
        light.operator("Arrange: Count").unwrap(),
    );
    assert_eq!(full.records, light.records);
    assert!(full.arranged.is_some());
    assert_eq!(light.arranged, None);
}

#[test]
fn a_program_that_never_registers_has_no_logger() {
    timely::execute(timely::Config::process(2), |worker| {
        worker.dataflow::<u64, _, _>(|scope| {
            scope.new_collection_from(0..100u64).1.skew_count();
        });
        assert!(worker
            .log_register()
            .unwrap()
            .get::<TimelyEventBuilder>("timely")
            .is_none());
    })
    .unwrap();
}

/// Records of the program of the user's own: the key sampler draws one in
/// 64, enough to name a key's share within 0.02 (its standard deviation is
/// 0.004).
const USER_RECORDS: u64 = 1_000_000;

/// The key of record `i` in a program of the user's own: key 0 brings
/// half the records, the others one record each, spread over any number
/// of workers.
fn user_key(i: u64) -> u64 {
    if i.is_multiple_of(2) {
        0
    } else {
        i / 2 + 1
    }
}

/// What a program of the user's own saw through its own `timely` logger,
/// registered before the doctor: operators named and records received.
#[derive(Default)]
struct OwnLog {
    operators: Vec<String>,
    received: u64,
}

/// An operator named `name` that passes its records on, exchanged by `route`.
fn pass<'scope>(
    name: &str,
    route: fn(&u64) -> u64,
    stream: timely::dataflow::StreamVec<'scope, u64, u64>,
) -> timely::dataflow::StreamVec<'scope, u64, u64> {
    use timely::dataflow::channels::pact::Exchange;
    use timely::dataflow::operators::generic::Operator;
    use timely::dataflow::operators::Inspect;
    stream
        .unary(Exchange::new(route), name, |_, _| {
            |input, output| {
                input.for_each(|cap, data| output.session(&cap).give_container(data));
            }
        })
        .inspect(|_: &u64| ())
}

/// A program of the user's own: two timely operators of its own, one
/// exchanging on a key that brings half the records (sampled), one on a
/// uniform key, on `workers` workers, with its own logger registered
/// before the doctor, in windows of `period`.
fn user_program(workers: usize, period: std::time::Duration) -> (Report, OwnLog) {
    use std::cell::RefCell;
    use std::rc::Rc;
    use timely::dataflow::operators::ToStream;
    use timely::logging::TimelyEvent;

    let guards = timely::execute(timely::Config::process(workers), move |worker| {
        let own = Rc::new(RefCell::new(OwnLog::default()));
        let sink = Rc::clone(&own);
        worker
            .log_register()
            .unwrap()
            .insert::<TimelyEventBuilder, _>("timely", move |_, batch| {
                let mut own = sink.borrow_mut();
                for (_, event) in batch.iter().flatten() {
                    match event {
                        TimelyEvent::Operates(op) => own.operators.push(op.name.clone()),
                        TimelyEvent::Messages(m) if !m.is_send => own.received += m.record_count as u64,
                        _ => {}
                    }
                }
            });
        let doctor = doctor::register_with(worker, doctor::Settings::default().with_period(period));
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        worker.dataflow::<u64, _, _>(|scope| {
            let records = (index..USER_RECORDS).step_by(peers as usize).to_stream(scope);
            let sampled = records
                .clone()
                .sample_keys("skewed", |i: &u64| user_key(*i), |key: &u64| *key);
            pass("Hot", |i| user_key(*i), sampled);
            pass("Uniform", |i| *i, records);
        });
        while worker.step() {}
        let report = doctor.report(worker);
        // The program's own logger is flushed with the registry: it has
        // received everything by now.
        worker.log_register().unwrap().flush();
        let own = own.take();
        report.map(|report| (report, own))
    })
    .unwrap();
    at_worker_0(guards)
}

#[test]
fn a_users_own_operators_keys_edges_and_windows_are_reported_beside_its_own_logger() {
    use std::time::Duration;
    for workers in 1..=4usize {
        let (report, own) = user_program(workers, Duration::from_millis(2));
        let skewed = report.operator("Hot").expect("the hot operator");
        let uniform = report.operator("Uniform").expect("the uniform operator");
        // Brute force: what each worker sends and receives.
        let (mut sent, mut received) = (vec![0u64; workers], vec![0u64; workers]);
        for i in 0..USER_RECORDS {
            sent[(i % workers as u64) as usize] += 1;
            received[(user_key(i) % workers as u64) as usize] += 1;
        }
        assert_eq!(skewed.records, received, "{workers} workers");
        let edge = report
            .channels
            .iter()
            .find(|channel| channel.target.0 == skewed.address)
            .expect("the skewed operator's input");
        assert_eq!((&edge.sent, &edge.received), (&sent, &received));
        let crossed: u64 = edge
            .between
            .iter()
            .filter(|(from, to, _)| from != to)
            .map(|e| e.2)
            .sum();
        if workers > 1 {
            assert_eq!(skewed.records_spread.busiest, 0);
            assert_eq!(skewed.origin, Some(doctor::Origin::Exchange));
            assert!(skewed.hint.is_some());
            assert!(crossed > 0);
        } else {
            assert_eq!((skewed.origin, crossed), (None, 0));
        }
        assert!(uniform.busiest_over_mean < 1.1, "{:?}", uniform.records);
        assert_eq!((uniform.origin, &uniform.hint), (None, &None));
        // The key: named, at half the records, on its worker (0 % workers).
        let keys = report.keys("skewed").expect("sampled");
        assert_eq!((keys.keys[0].key.as_str(), keys.keys[0].worker), ("0", 0));
        assert!((keys.keys[0].share - 0.5).abs() < 0.02, "{}", keys.keys[0].share);
        assert_eq!(keys.records, USER_RECORDS);
        // Where they land, estimated from the sampled: within 3 %.
        for (landed, received) in keys.landed.iter().zip(&received) {
            assert!(
                (*landed as f64 / *received as f64 - 1.0).abs() < 0.03,
                "{:?} {received:?}",
                keys.landed
            );
        }
        // The windows add up to the whole run, per worker.
        let mut windowed = vec![0u64; workers];
        for window in &skewed.series {
            for (worker, records) in window.records.iter().enumerate() {
                windowed[worker] += records;
            }
        }
        assert_eq!(windowed, skewed.records);
        assert_eq!(skewed.series.len(), report.windows.len());
        // Worker 0's own logger kept receiving: its operators, and the
        // records the doctor counted on every channel into worker 0 (and
        // those of the doctor's own dataflow, which the report leaves out).
        assert!(own.operators.iter().any(|name| name == "Hot"), "{:?}", own.operators);
        let reported: u64 = report.channels.iter().map(|c| c.received[0]).sum();
        assert!(
            (reported..=reported + 4 * workers as u64).contains(&own.received),
            "{} {reported}",
            own.received
        );
    }
}

/// The series of the facts' arrangement (`join`'s `ArrangeByKey`, or
/// `skew_join`'s `SkewJoinArrange`) on 4 workers, over a sliding window of
/// facts (each epoch's retracted three epochs on) whose key 0 brings half
/// the records until half-way through the run, when key 1 does instead:
/// windows of 250 ms over a run of about 3 s, fed for a time (not a
/// number of epochs) so that every window holds several epochs however
/// slow the machine. Beside it, the series of the same facts arranged by a
/// uniform key: the windows' own noise under this run's load.
fn moving_key_series(skew: bool) -> (Vec<doctor::OperatorWindow>, Vec<doctor::OperatorWindow>) {
    use equipoise::skew::SkewJoin;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    use timely::dataflow::operators::Probe;
    use timely::dataflow::ProbeHandle;
    // The epoch the key moves at, once worker 0 has set it.
    let move_at = Arc::new(AtomicU64::new(u64::MAX));
    let report = at_worker_0(
        timely::execute(timely::Config::process(4), move |worker| {
            let settings = doctor::Settings::default().with_period(Duration::from_millis(250));
            let doctor = doctor::register_with(worker, settings);
            let (index, peers) = (worker.index() as u64, worker.peers() as u64);
            let probe = ProbeHandle::new();
            let (mut facts, mut table) = worker.dataflow::<u64, _, _>(|scope| {
                let (facts_in, facts) = scope.new_collection::<(u64, u64), isize>();
                let (table_in, table) = scope.new_collection::<(u64, u64), isize>();
                // The reference: every fact by its own number, evenly spread.
                facts
                    .clone()
                    .map(|(_, n)| (n, ()))
                    .arrange_by_key_named("UniformReference");
                let joined = if skew {
                    facts.skew_join(table)
                } else {
                    facts.join(table)
                };
                joined.inner.probe_with(&probe);
                (facts_in, table_in)
            });
            for key in (index..1000).step_by(peers as usize) {
                table.insert((key, key));
            }
            // Every worker moves at the same epoch: worker 0 sets it two
            // epochs ahead, which no worker reaches before worker 0 does.
            let start = Instant::now();
            let mut epoch = 0u64;
            loop {
                let at = move_at.load(Ordering::SeqCst);
                if at != u64::MAX && epoch >= 2 * at {
                    break;
                }
                let fact = |epoch: u64, i: u64| {
                    let hot = u64::from(epoch >= at);
                    (if i.is_multiple_of(2) { hot } else { 2 + i % 998 }, epoch * 2000 + i)
                };
                for i in (index..2000).step_by(peers as usize) {
                    facts.insert(fact(epoch, i));
                    if epoch >= 3 {
                        facts.remove(fact(epoch - 3, i));
                    }
                }
                epoch += 1;
                close_epoch(worker, &mut [&mut facts, &mut table], epoch, &probe);
                if index == 0 && at == u64::MAX && start.elapsed() >= Duration::from_millis(1500) {
                    move_at.store(epoch + 2, Ordering::SeqCst);
                }
            }
            drop((facts, table));
            while worker.step() {}
            doctor.report(worker)
        })
        .unwrap(),
    );
    let name = if skew { "SkewJoinArrange" } else { "ArrangeByKey" };
    let arrangement = report
        .operators
        .iter()
        .filter(|op| op.name == name)
        .max_by_key(|op| op.records.iter().sum::<u64>())
        .expect("the facts' arrangement");
    let reference = report.operator("UniformReference").expect("the reference");
    (arrangement.series.clone(), reference.series.clone())
}

#[test]
fn the_series_shows_a_moving_hot_key_as_a_step_and_skew_join_even_after_its_first_windows() {
    // Windows with half the mean window's records or more (a run's last
    // window may hold a few), after the first two; their ratios sorted. A
    // window's edges cut an epoch's deliveries where they fall, which a
    // busy machine moves: the test reads the median and the quartiles,
    // which that noise does not move past the thresholds.
    let ratios = |series: &[doctor::OperatorWindow]| -> Vec<f64> {
        let sum = |w: &doctor::OperatorWindow| w.records.iter().sum::<u64>();
        let mean = series.iter().map(sum).sum::<u64>() / series.len().max(1) as u64;
        let mut ratios: Vec<f64> = series
            .iter()
            .skip(2)
            .filter(|w| sum(w) * 2 >= mean)
            .map(|w| w.busiest_over_mean)
            .collect();
        ratios.sort_by(f64::total_cmp);
        ratios
    };
    let busiest = |w: &doctor::OperatorWindow| (0..w.records.len()).max_by_key(|&i| w.records[i]).unwrap();
    let (own_series, _) = moving_key_series(false);
    let own = ratios(&own_series);
    assert!(own.len() >= 4, "{own:?}");
    // Three quarters of the windows or more read 1.5 or more.
    assert!(own[own.len() / 4] >= 1.5, "{own:?}");
    // Key 0 and key 1 land on different workers: the busiest one steps.
    let (first, last) = (busiest(&own_series[0]), busiest(&own_series[own_series.len() - 2]));
    assert_eq!(
        (first, last),
        ((0u64.hashed() % 4) as usize, (1u64.hashed() % 4) as usize)
    );
    let (skew, reference) = moving_key_series(true);
    let (skew, reference) = (ratios(&skew), ratios(&reference));
    assert!(skew.len() >= 4, "{skew:?}");
    // Three quarters of the windows or more read 1.2 or less, or no more
    // than uniform keys read in the same windows (a loaded machine cuts
    // epochs unevenly at the windows' edges, which the docs measure).
    let quartile = |ratios: &[f64]| ratios[ratios.len() * 3 / 4 - 1];
    assert!(
        quartile(&skew) <= 1.2_f64.max(quartile(&reference) + 0.05),
        "{skew:?} against uniform {reference:?}"
    );
}

#[test]
fn the_page_draws_every_operator_marks_the_skewed_one_and_carries_the_report() {
    let (report, _) = user_program(2, std::time::Duration::from_millis(50));
    let page = report.html();
    assert!(page.starts_with("<!doctype html>") && page.trim_end().ends_with("</html>"));
    // Self-contained: nothing fetched.
    for fetched in ["src=", "href=\"http", "@import", "url(http"] {
        assert!(!page.contains(fetched), "{fetched}");
    }
    // Every operator has its box, with its ratio; the one whose exchange
    // makes its skew is marked, the even one is not.
    let group = |index: usize| -> String {
        let start = page.find(&format!("data-op=\"{index}\"><title>")).expect("a box");
        let open = page[..start].rfind("<g class=").unwrap();
        page[open..start + page[start..].find("</g>").unwrap()].to_owned()
    };
    for (index, op) in report.operators.iter().enumerate() {
        assert!(
            group(index).contains(&format!("{:.2}×", op.busiest_over_mean)),
            "{}",
            op.name
        );
    }
    let named = |name: &str| report.operators.iter().position(|op| op.name == name).unwrap();
    assert!(group(named("Hot")).starts_with("<g class=\"op skewed\""));
    assert!(group(named("Uniform")).starts_with("<g class=\"op\""));
    // The costliest table, the hint and the key: key 0 at half the records.
    assert!(page.contains("<h2>Costliest skew</h2>"));
    assert!(page.contains(
        report
            .operator("Hot")
            .unwrap()
            .hint
            .as_deref()
            .unwrap()
            .split('`')
            .next()
            .unwrap()
    ));
    let share = report.keys("skewed").unwrap().keys[0].share;
    assert!(page.contains(&format!("<td><code>0</code></td><td>{share:.3}</td><td>worker 0</td>")));
    // The script's data is the report itself.
    let json = page
        .split("const REPORT = ")
        .nth(1)
        .unwrap()
        .split(";\n")
        .next()
        .unwrap();
    assert!(!json.contains('<'));
    assert_eq!(json.replace("\\u003c", "<"), serde_json::to_string(&report).unwrap());
}

/// A D-Choices count of words, one of which brings 30 % of the records,
/// on `workers` workers: the report, and each word's count by brute force.
fn d_choices_report(workers: usize) -> (Report, std::collections::HashMap<String, u64>) {
    use equipoise::pkg::{key_hash, Grouped, PkgCount};
    use timely::dataflow::operators::{Input, Probe};
    use timely::dataflow::ProbeHandle;
    const WORDS: u64 = 60_000;
    let word = |i: u64| {
        if i % 10 < 3 {
            "hot".to_owned()
        } else {
            format!("w{}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 5_000)
        }
    };
    let report = at_worker_0(
        timely::execute(timely::Config::process(workers), move |worker| {
            let doctor = doctor::register(worker);
            let probe = ProbeHandle::new();
            let mut input = worker.dataflow::<u64, _, _>(|scope| {
                let (input, words) = scope.new_input::<Vec<String>>();
                let pact = Grouped::d_choices(|word: &String| key_hash(word)).with_key_names(String::clone);
                words.pkg_count_running(pact).probe_with(&probe);
                input
            });
            let (index, peers) = (worker.index() as u64, worker.peers() as u64);
            for i in (index..WORDS).step_by(peers as usize) {
                input.send(word(i));
            }
            input.close();
            while worker.step() {}
            doctor.report(worker)
        })
        .unwrap(),
    );
    let mut counts = std::collections::HashMap::new();
    for i in 0..WORDS {
        *counts.entry(word(i)).or_insert(0) += 1;
    }
    (report, counts)
}

#[test]
fn the_report_names_the_keys_a_d_choices_pact_spreads_wider() {
    // Two workers are both every key's candidates: no head.
    assert_eq!(d_choices_report(2).0.heads, []);
    for workers in [3, 4] {
        let (report, counts) = d_choices_report(workers);
        let mut heaviest: Vec<(&String, &u64)> = counts.iter().collect();
        heaviest.sort_by_key(|&(_, &count)| std::cmp::Reverse(count));
        let top: Vec<String> = heaviest.iter().take(20).map(|(word, _)| format!("{word:?}")).collect();
        assert_eq!(report.heads.len(), 1, "{workers} workers: {:?}", report.heads);
        let head = &report.heads[0];
        assert!(!head.operator.is_empty(), "{head:?}");
        // The hot word, named as `Debug` writes it, by every sender.
        let hot = head.keys.iter().find(|key| key.name.as_deref() == Some("\"hot\""));
        let hot = hot.unwrap_or_else(|| panic!("{workers} workers: {head:?}"));
        assert_eq!(hot.senders, workers);
        assert!((2..=workers).contains(&hot.workers), "{hot:?}");
        // Any other named key is among the heaviest by brute force.
        for key in &head.keys {
            let name = key.name.as_ref().expect("every head key named");
            assert!(top.contains(name), "{name} is not among the 20 heaviest");
        }
        assert!(report.to_string().contains("PKG head into"));
        // The page's table of the head, the word escaped.
        assert!(report.html().contains("<tr><td><code>&quot;hot&quot;</code></td>"));
    }
}
