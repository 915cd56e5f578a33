//! Each capability's example as 2 processes × 1 worker on 127.0.0.1 gives
//! the results of 1 process × 2 workers. What a cluster costs in speed is
//! a benchmark's to say (`cargo bench --bench cluster`, which shows each
//! example's kept share beside timely's own), not a test's: a threshold on
//! throughput inside `cargo test` fails on a busy machine and passes a
//! slow one.

mod support;

use std::time::Duration;

use equipoise_lab::common::example_runs::ExampleRun;
use equipoise_lab::common::launch::Shape;

#[test]
fn two_processes_give_one_process_results() {
    let bin_dir = support::example("wordcount").parent().unwrap().to_owned();
    let timeout = Duration::from_secs(120);
    let (cluster, one) = (Shape::new(2, 1), Shape::new(1, 2));
    for example in ExampleRun::all() {
        // The loops' examples run for seconds by default: 2 s are enough.
        let example = match example.name.as_str() {
            "shedding" | "throttle" => example.with(&["--duration-s", "2"]),
            _ => example,
        };
        let reference = example.run(&bin_dir, one, timeout).unwrap();
        let figures = example.run(&bin_dir, cluster, timeout).unwrap();
        assert!(
            figures.throughput > 0.0,
            "{}: the cluster ran: {figures:?}",
            example.name
        );
        assert_eq!(
            figures.digest, reference.digest,
            "{}: results differ across processes",
            example.name
        );
    }
}
