//! Flow control against what a user would do instead, side by side in one
//! run: the program of `examples/throttle.rs` (included below, so the
//! benchmark runs exactly the example) with its source throttled by the
//! loop, unlimited (it saturates the dataflow and its delay grows without
//! bound), or at a fixed rate.
//!
//! `cargo bench --bench throttle -- [--workers 1,2] [--shape-workers 2,4] [--runs 3] [--duration-s 10] [--cost-us 20] [--scenarios unlimited,shapes,step,slow]`
//!
//! - `unlimited`: a source with unlimited data, D_t 300 ms and 2 s:
//!   throttled processes ≥ 0.95× the records/s of unlimited, p99 ≤ D_t.
//! - `step`: the cost of a record steps up by half mid-run, D_t 300 ms:
//!   p99 over the run ≤ 1.2 D_t and the processed rate back to ≥ 0.9× the
//!   new capacity within 5 periods; a fixed-rate source set at the capacity
//!   before the step beside it. The capacities before and after the step are
//!   what the unlimited source processed.
//! - `slow`: data arriving at 50 % and 80 % of the capacity the unlimited
//!   source measured: the throttle refuses nothing (reported as refusals
//!   and limited periods) and the delay is as without it.
//! - `shapes`: one reader (worker 0) and skewed readers (worker 0 reads
//!   80 %), the records exchanged before the costly stage, at
//!   `--shape-workers` (2 and 4), D_t 300 ms: as `unlimited`, the readers'
//!   allowances adding up to what the dataflow can take.
//!
//! Every figure is the median of `--runs` runs (each source once per run,
//! in turn), with the range.

use clap::Parser;
use equipoise_lab::common::median::spread;

#[path = "../examples/throttle.rs"]
#[allow(dead_code)]
mod example;

use example::{Args as ExampleArgs, Report};

#[derive(Parser, Debug)]
struct Args {
    /// Worker counts.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2])]
    workers: Vec<usize>,
    /// Runs per row: the table shows medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seconds each run reads.
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// Cost per record before any step, µs.
    #[arg(long, default_value_t = 20.0)]
    cost_us: f64,
    /// Which scenarios: unlimited, step, slow, shapes.
    #[arg(long, value_delimiter = ',', default_values_t = ["unlimited".to_string(), "step".to_string(), "slow".to_string(), "shapes".to_string()])]
    scenarios: Vec<String>,
    /// Worker counts of the `shapes` scenario.
    #[arg(long, value_delimiter = ',', default_values_t = [2, 4])]
    shape_workers: Vec<usize>,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One run of the example with these flags (and `-w workers`, quiet).
fn run(workers: usize, flags: &[String]) -> Report {
    let mut all = vec![
        "throttle".to_string(),
        "-w".into(),
        workers.to_string(),
        "--quiet".into(),
    ];
    all.extend(flags.iter().cloned());
    example::execute(ExampleArgs::parse_from(&all))
        .unwrap_or_else(|e| panic!("throttle {all:?}: {e}"))
        .expect("worker 0 runs in this process")
        .0
}

/// Medians of `runs` runs of each of `sources` (flags each), in turn.
fn side_by_side(workers: usize, runs: usize, sources: &[Vec<String>]) -> Vec<Vec<Report>> {
    let mut reports: Vec<Vec<Report>> = sources.iter().map(|_| Vec::new()).collect();
    for _ in 0..runs {
        for (source, flags) in sources.iter().enumerate() {
            reports[source].push(run(workers, flags));
        }
    }
    reports
}

/// "median (low–high)" of a figure over runs.
fn figure(reports: &[Report], f: impl Fn(&Report) -> f64, digits: usize) -> (f64, String) {
    let (low, median, high) = spread(reports.iter().map(f).collect());
    (median, format!("{median:.digits$} ({low:.digits$}–{high:.digits$})"))
}

/// The median over the periods that end in `[from_s, to_s)` of the records
/// processed per second.
fn rate_between(report: &Report, from_s: f64, to_s: f64) -> f64 {
    let rates: Vec<f64> = report
        .periods
        .iter()
        .filter(|p| p.end_s > from_s && p.end_s <= to_s)
        .map(|p| p.processed)
        .collect();
    assert!(
        !rates.is_empty(),
        "no period in {from_s}–{to_s} s: lengthen --duration-s"
    );
    spread(rates).1
}

/// Periods after `at_s` until the processed rate is at least `floor`.
fn periods_back(report: &Report, at_s: f64, floor: f64) -> Option<usize> {
    report
        .periods
        .iter()
        .filter(|p| p.end_s > at_s && p.end_s <= report.duration_s)
        .position(|p| p.processed >= floor)
}

/// Throttled against unlimited data, side by side: the first table's rows.
fn unlimited_table(workers: &[usize], targets: &[u32], readers: &[&str], runs: usize, common: &str) {
    println!("| workers | readers | D_t ms | source | records/s | p99 ms | max ms | throttled / unlimited | holds |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &workers in workers {
        for &reading in readers {
            for &target in targets {
                let sources = ["throttle", "unlimited"].map(|source| {
                    flags(&format!(
                        "{common} --target-ms {target} --readers {reading} --source {source}"
                    ))
                });
                let reports = side_by_side(workers, runs, &sources);
                let (throttled, unlimited) = (&reports[0], &reports[1]);
                let rate = |r: &[Report]| figure(r, |r| r.processed_per_s, 0);
                let ratio = rate(throttled).0 / rate(unlimited).0;
                let p99 = figure(throttled, |r| r.delay_ms.p99, 0);
                let holds = ratio >= 0.95 && p99.0 <= target as f64;
                for (name, r) in [("throttle", throttled), ("unlimited", unlimited)] {
                    let mine = name == "throttle";
                    println!(
                        "| {workers} | {reading} | {target} | {name} | {} | {} | {} | {} | {} |",
                        rate(r).1,
                        figure(r, |r| r.delay_ms.p99, 0).1,
                        figure(r, |r| r.delay_ms.max, 0).1,
                        if mine { format!("{ratio:.3}") } else { String::new() },
                        verdict(mine, holds),
                    );
                }
            }
        }
    }
    println!();
}

/// The "holds" cell: the throttle's row says whether it holds; the others' are empty.
fn verdict(throttle: bool, holds: bool) -> &'static str {
    match (throttle, holds) {
        (false, _) => "",
        (true, true) => "yes",
        (true, false) => "**no**",
    }
}

fn flags(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

fn main() {
    let args = Args::parse();
    let duration = format!("--duration-s {} --cost-us {}", args.duration_s, args.cost_us);
    let scenario = |name: &str| args.scenarios.iter().any(|s| s == name);
    if scenario("unlimited") {
        println!("## A source with unlimited data\n");
        unlimited_table(&args.workers, &[300, 2000], &["even"], args.runs, &duration);
    }
    if scenario("shapes") {
        println!("## One reader and skewed readers, unlimited data\n");
        unlimited_table(
            &args.shape_workers,
            &[300],
            &["one", "skewed:0.8"],
            args.runs,
            &duration,
        );
    }
    if scenario("step") {
        let (target, at_s) = (300.0, args.duration_s / 2.0);
        let step = format!("--cost-step {}:{at_s}", args.cost_us * 1.5);
        println!("## A +50 % cost step at {at_s} s, D_t {target} ms\n");
        println!(
            "| workers | source | records/s | p99 ms | max ms | over D_t % | periods until ≥ 0.9× new capacity | holds |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for &workers in &args.workers {
            let base = format!("{duration} --target-ms {target} {step}");
            // The capacities before and after the step, as the unlimited source measures them.
            let unlimited = side_by_side(workers, args.runs, &[flags(&format!("{base} --source unlimited"))]).remove(0);
            let before = spread(unlimited.iter().map(|r| rate_between(r, 0.5, at_s)).collect()).1;
            let after = spread(
                unlimited
                    .iter()
                    .map(|r| rate_between(r, at_s + 0.5, r.duration_s))
                    .collect(),
            )
            .1;
            let sources = [
                flags(&format!("{base} --source throttle")),
                flags(&format!("{base} --source fixed:{before:.0}")),
            ];
            let mut reports = side_by_side(workers, args.runs, &sources);
            reports.push(unlimited);
            println!("| {workers} | capacity (unlimited's) | {before:.0} before, {after:.0} after | | | | | |");
            for (name, r) in [
                ("throttle", &reports[0]),
                (&*format!("fixed:{before:.0}"), &reports[1]),
                ("unlimited", &reports[2]),
            ] {
                let p99 = figure(r, |r| r.delay_ms.p99, 0);
                let back: Vec<f64> = r
                    .iter()
                    .map(|r| periods_back(r, at_s, 0.9 * after).map_or(f64::INFINITY, |k| k as f64))
                    .collect();
                let back = spread(back).1;
                let holds = p99.0 <= 1.2 * target && back <= 5.0;
                println!(
                    "| {workers} | {name} | {} | {} | {} | {} | {} | {} |",
                    figure(r, |r| r.processed_per_s, 0).1,
                    p99.1,
                    figure(r, |r| r.delay_ms.max, 0).1,
                    figure(r, |r| 100.0 * r.over_target, 2).1,
                    if back.is_finite() {
                        format!("{back:.0}")
                    } else {
                        "never".into()
                    },
                    verdict(name == "throttle", holds),
                );
            }
        }
        println!();
    }
    if scenario("slow") {
        println!("## A source slower than the dataflow, D_t 300 ms\n");
        println!("| workers | arrivals | source | records/s | p50 ms | p99 ms | max ms | refusals | limited periods | holds |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for &workers in &args.workers {
            let unlimited = side_by_side(workers, 1, &[flags(&format!("{duration} --source unlimited"))]).remove(0);
            let capacity = unlimited[0].processed_per_s;
            for share in [0.5, 0.8] {
                let rate = (share * capacity).round();
                let sources = ["throttle", "unlimited"]
                    .map(|source| flags(&format!("{duration} --arrival-rate {rate} --source {source}")));
                let reports = side_by_side(workers, args.runs, &sources);
                let p99 = |r: &[Report]| figure(r, |r| r.delay_ms.p99, 1);
                let refusals = figure(&reports[0], |r| r.refusals as f64, 0);
                let holds = refusals.0 == 0.0 && p99(&reports[0]).0 <= p99(&reports[1]).0 * 1.1 + 1.0;
                for (name, r) in [("throttle", &reports[0]), ("unlimited", &reports[1])] {
                    let mine = name == "throttle";
                    println!(
                        "| {workers} | {rate:.0}/s ({:.0} % of capacity) | {name} | {} | {} | {} | {} | {} | {} | {} |",
                        100.0 * share,
                        figure(r, |r| r.processed_per_s, 0).1,
                        figure(r, |r| r.delay_ms.p50, 1).1,
                        p99(r).1,
                        figure(r, |r| r.delay_ms.max, 1).1,
                        if mine {
                            figure(r, |r| r.refusals as f64, 0).1
                        } else {
                            String::new()
                        },
                        if mine {
                            figure(r, |r| r.limited_periods as f64, 0).1
                        } else {
                            String::new()
                        },
                        verdict(mine, holds),
                    );
                }
            }
        }
    }
}
