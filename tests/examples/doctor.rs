//! The skew report written by the examples (`--doctor`): the differential
//! example names a skewed join and its hottest key, and its skew-proof join
//! is even; two processes report as one process of the same workers; the
//! word count, spatial, shedding and throttle examples write their reports.

use differential_dataflow::Hashable;
use equipoise::doctor::Report;

use crate::support::{report, run_example, run_two_processes, scratch};

/// The differential example's `--doctor` report of a run with `args`.
fn doctor_json(name: &str, args: &[&str]) -> serde_json::Value {
    let path = scratch(name);
    let out = run_example("differential", &[args, &["--doctor", path.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    report(&path)
}

/// The operator named `name` in a JSON report.
fn named<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["operators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["name"] == name)
        .unwrap()
}

const JOIN: [&str; 8] = [
    "--join",
    "--keys",
    "zipf:1.5:100000",
    "--epochs",
    "6",
    "--inserts",
    "50000",
    "-w",
];

#[test]
fn the_example_names_a_skewed_join_and_the_skew_proof_one_is_even() {
    let join = doctor_json("doctor-join.json", &[&JOIN[..], &["4"]].concat());
    let arranged = join["operators"][0]["records"].clone();
    let facts = join["operators"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|op| op["name"] == "ArrangeByKey")
        .map(|op| op["busiest_over_mean"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(facts >= 1.5, "{facts} {arranged}");
    let skew = doctor_json("doctor-skew-join.json", &[&JOIN[..], &["4", "--skew"]].concat());
    let split = named(&skew, "SkewJoinArrange")["busiest_over_mean"].as_f64().unwrap();
    assert!(split <= 1.2, "{split}");
    assert!(!skew["hot_keys"].as_array().unwrap().is_empty());
    // The join names its hot keys: key 0 (the hottest) among them, by the
    // hash differential routes it by.
    let names = skew["hot_key_names"].as_array().unwrap();
    assert!(
        names.iter().any(|named| named[0] == 0u64.hashed() && named[1] == "0"),
        "{names:?}"
    );
}

#[test]
fn two_processes_report_as_one_process_of_the_same_workers() {
    let args = ["--keys", "zipf:1.2:10000", "--epochs", "4", "--inserts", "20000"];
    let one = doctor_json("doctor-one.json", &[&args[..], &["-w", "4"]].concat());
    let path = scratch("doctor-two.json");
    run_two_processes(
        "differential",
        &[&args[..], &["--doctor", path.to_str().unwrap()]].concat(),
        &scratch("doctor-two-run.json"),
    );
    let two = report(&path);
    assert_eq!(two["workers"], 4);
    let (one, two): (Report, Report) = (
        serde_json::from_value(one).expect("a report"),
        serde_json::from_value(two).expect("a report"),
    );
    let (one_count, two_count) = (
        one.operator("Arrange: Count").unwrap(),
        two.operator("Arrange: Count").unwrap(),
    );
    assert_eq!(one_count.records, two_count.records);
    assert!(one_count.busiest_over_mean > 1.2);
    // Every channel carried the same records between the same workers.
    let channels = |report: &Report| {
        let mut channels: Vec<_> = report
            .channels
            .iter()
            .map(|channel| {
                let mut between = channel.between.clone();
                between.sort();
                (channel.source.clone(), channel.target.clone(), between)
            })
            .collect();
        channels.sort();
        channels
    };
    assert_eq!(channels(&one), channels(&two));
    // Each operator's windows add up to its records, in both.
    for report in [&one, &two] {
        for op in report.operators.iter().filter(|op| !op.series.is_empty()) {
            let summed: Vec<u64> = (0..report.workers)
                .map(|worker| op.series.iter().map(|window| window.records[worker]).sum())
                .collect();
            assert_eq!(summed, op.records, "{}", op.name);
        }
    }
    // The same places sampled, the heaviest key the same at about its share.
    let places = |report: &Report| report.keys.iter().map(|keys| keys.place.clone()).collect::<Vec<_>>();
    assert_eq!(places(&one), places(&two));
    let (one_key, two_key) = (&one.keys[0].keys[0], &two.keys[0].keys[0]);
    assert_eq!((&one_key.key, one_key.worker), (&two_key.key, two_key.worker));
    assert!((one_key.share - two_key.share).abs() < 0.05, "{one_key:?} {two_key:?}");
}

#[test]
fn the_word_count_and_spatial_examples_write_their_reports() {
    // Key grouping: the counting operator's records per worker are the
    // example's own count of what each worker counted.
    let (path, counted) = (scratch("doctor-wordcount.json"), scratch("wordcount-report.json"));
    let args = [
        "--grouping",
        "key",
        "--keys",
        "zipf:1.5:10000",
        "--records",
        "100000",
        "-w",
        "3",
    ];
    let files = [
        "--doctor",
        path.to_str().unwrap(),
        "--report",
        counted.to_str().unwrap(),
    ];
    let out = run_example("wordcount", &[&args[..], &files[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (diagnosed, counted) = (report(&path), report(&counted));
    assert_eq!(
        named(&diagnosed, "PkgPartials")["records"],
        counted["per_worker_records"]
    );
    let path = scratch("doctor-spatial.json");
    let out = run_example(
        "spatial",
        &[
            "--points",
            "20000",
            "--queries",
            "200",
            "-w",
            "2",
            "--doctor",
            path.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let diagnosed = report(&path);
    assert_eq!(diagnosed["workers"], 2);
    let routed: u64 = named(&diagnosed, "SwarmExecutor")["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_u64().unwrap())
        .sum();
    assert!(routed >= 20_000, "{routed}");
}

#[test]
fn the_differential_examples_zipf_join_names_its_hottest_key_at_its_true_share() {
    use equipoise_lab::common::keys::{KeySampler, KeySpec};
    // 200 000 facts an epoch: one in 64 sampled names a share within 0.02
    // (its standard deviation is 0.003).
    let args = [&JOIN[..6], &["200000", "-w", "4"]].concat();
    let join = doctor_json("doctor-keys.json", &args);
    let facts = join["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|place| place["place"] == "facts")
        .expect("the facts sampled");
    // Brute force: the example inserts 6 epochs of 200 000 facts and
    // retracts each three epochs on (the first three, by the end).
    let sampler = KeySampler::new(&"zipf:1.5:100000".parse::<KeySpec>().unwrap(), 1);
    let updates: Vec<u64> = (0..6 * 200_000).chain(0..3 * 200_000).collect();
    let hottest = updates.iter().filter(|&&record| sampler.rank(record) == 0).count();
    let truth = hottest as f64 / updates.len() as f64;
    assert_eq!(facts["records"], updates.len());
    let named = &facts["keys"][0];
    assert_eq!(named["key"], "0");
    assert_eq!(named["worker"], 0u64.hashed() % 4);
    let share = named["share"].as_f64().unwrap();
    assert!((share - truth).abs() <= 0.02, "{share} against {truth}");
}

#[test]
fn two_processes_name_a_d_choices_head_as_one_process_does() {
    let args = [
        "--grouping",
        "dchoices",
        "--keys",
        "zipf:1.5:10000",
        "--records",
        "200000",
    ];
    let heads = |report: &Report| -> Vec<(Option<String>, usize)> {
        let mut keys: Vec<_> = report.heads[0]
            .keys
            .iter()
            .map(|key| (key.name.clone(), key.senders))
            .collect();
        keys.sort();
        keys
    };
    let path = scratch("doctor-dchoices-one.json");
    let out = run_example(
        "wordcount",
        &[&args[..], &["-w", "4", "--doctor", path.to_str().unwrap()]].concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let one: Report = serde_json::from_value(report(&path)).expect("a report");
    let path = scratch("doctor-dchoices-two.json");
    run_two_processes(
        "wordcount",
        &[&args[..], &["--doctor", path.to_str().unwrap()]].concat(),
        &scratch("doctor-dchoices-two-run.json"),
    );
    let two: Report = serde_json::from_value(report(&path)).expect("a report");
    // The hottest word, named by all four senders in both.
    assert!(
        heads(&one).contains(&(Some("\"k0\"".to_owned()), 4)),
        "{:?}",
        heads(&one)
    );
    assert!(
        heads(&two).contains(&(Some("\"k0\"".to_owned()), 4)),
        "{:?}",
        heads(&two)
    );
}

#[test]
fn the_shedding_and_throttle_examples_write_their_reports() {
    // One reader: the admitted records are exchanged to both workers, as
    // evenly as a hash spreads them (the report once read 1.51 here, when
    // the exchange took a float's unmixed bits).
    let path = scratch("doctor-shedding.json");
    let args = ["run", "-w", "2", "--duration-s", "1", "--readers", "one", "--doctor"];
    let out = run_example("shedding", &[&args[..], &[path.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let diagnosed: Report = serde_json::from_value(report(&path)).expect("a report");
    let process = diagnosed.operator("Process").expect("the costly stage");
    let records: u64 = process.records.iter().sum();
    assert!(records > 1000, "{:?}", process.records);
    assert!(process.busiest_over_mean < 1.1, "{:?}", process.records);
    let path = scratch("doctor-throttle.json");
    let args = ["-w", "2", "--duration-s", "1", "--doctor"];
    let out = run_example("throttle", &[&args[..], &[path.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let diagnosed: Report = serde_json::from_value(report(&path)).expect("a report");
    assert_eq!(diagnosed.workers, 2);
    assert!(diagnosed.operator("ThrottleLoop").is_some());
}
