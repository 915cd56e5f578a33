//! A coarse guard on what a cluster costs: each capability's example as 2
//! processes × 1 worker on 127.0.0.1 must keep at least a third of the
//! throughput of 1 process × 2 workers measured beside it, with the same
//! results. The targets (0.8× and more) live in `cargo bench --bench
//! cluster`; this catches a job or operator that crawls across processes
//! (a lost TCP_NODELAY made the word count 0.12× and the spatial job 0.03×).

mod support;

use std::time::Duration;

use equipoise_lab::common::example_runs::{ExampleRun, Figures};
use equipoise_lab::common::launch::Shape;

/// Rounds tried before a slow cluster fails the test: each measures both
/// shapes under whatever else the machine is doing then.
const ATTEMPTS: usize = 3;

#[test]
fn two_processes_keep_a_third_of_one_process_throughput() {
    let bin_dir = support::example("wordcount").parent().unwrap().to_owned();
    let timeout = Duration::from_secs(120);
    let (cluster, one) = (Shape::new(2, 1), Shape::new(1, 2));
    for example in ExampleRun::all() {
        // The loops' examples run for seconds by default: 2 s show their pace.
        let example = match example.name.as_str() {
            "shedding" | "throttle" => example.with(&["--duration-s", "2"]),
            _ => example,
        };
        let mut seen: Vec<(Figures, Figures)> = Vec::new();
        for _ in 0..ATTEMPTS {
            let reference = example.run(&bin_dir, one, timeout).unwrap();
            let figures = example.run(&bin_dir, cluster, timeout).unwrap();
            assert_eq!(
                figures.digest, reference.digest,
                "{}: results differ across processes",
                example.name
            );
            seen.push((figures, reference));
            if figures.throughput * 3.0 >= reference.throughput {
                break;
            }
        }
        let best = seen
            .iter()
            .map(|(cluster, one)| cluster.throughput / one.throughput)
            .fold(0.0, f64::max);
        assert!(
            best >= 1.0 / 3.0,
            "{}: 2 × 1 against 1 × 2, {ATTEMPTS} rounds of (cluster, one process): {seen:?}",
            example.name
        );
    }
}
