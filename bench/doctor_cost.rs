//! What the skew report costs: the differential example (and the word
//! count) with and without `--doctor` (its keys sampled, its series in
//! windows of a second and of 100 ms; and for the differential example,
//! `--doctor` with `--doctor-arrangements`), one process at each
//! worker count, in turn within each round so that all meet the same
//! machine.
//!
//! `cargo bench --bench doctor_cost -- [--workers 1,2,4] [--runs 9] [--examples differential,wordcount] [--bin-dir DIR]`
//!
//! A row shows the medians over `--runs` rounds of throughput without and
//! with the report, the median of the rounds' ratios (with their range),
//! and the epoch latency p50 of each. The target: at least 0.95 of the
//! throughput without the report.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use equipoise_lab::common::example_runs::{ExampleRun, Figures};
use equipoise_lab::common::launch::Shape;
use equipoise_lab::common::median::spread;

#[derive(Parser, Debug)]
struct Args {
    /// Worker counts (one process each).
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4])]
    workers: Vec<usize>,
    /// Rounds per row: the table shows medians.
    #[arg(long, default_value_t = 9)]
    runs: usize,
    /// Which examples: differential (its join of Zipf-1.5 facts, and its
    /// count with `--grouping pkg`), wordcount.
    #[arg(long, value_delimiter = ',', default_values_t = ["differential".to_string(), "wordcount".to_string()])]
    examples: Vec<String>,
    /// Where the example binaries are (default: target/release/examples,
    /// built by `cargo build --release --examples`).
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() {
    let args = Args::parse();
    let bin_dir = args
        .bin_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/release/examples"));
    let report = std::env::temp_dir().join(format!("doctor-cost-{}.json", std::process::id()));
    let report = report.to_str().expect("a UTF-8 temporary path").to_string();
    let mut runs = Vec::new();
    for example in ExampleRun::all()
        .into_iter()
        .filter(|run| args.examples.contains(&run.name))
    {
        if example.name == "differential" {
            runs.push(example.clone().instead(&["--join", "--keys", "zipf:1.5:100000"]));
        }
        runs.push(example);
    }
    println!(
        "| example | workers | throughput without / with the report | with ÷ without (range) | p50 ms without / with |"
    );
    println!("|---|---|---|---|---|");
    for run in &runs {
        // The report at its default windows (a second), and at windows of
        // 100 ms (a series ten times as fine); the differential example
        // samples its keys whenever the report is asked for.
        let mut diagnosed = vec![
            run.clone().with(&["--doctor", &report]),
            run.clone().with(&["--doctor", &report, "--doctor-period-ms", "100"]),
        ];
        if run.program == "differential" {
            diagnosed.push(diagnosed[0].clone().with(&["--doctor-arrangements"]));
        }
        for &workers in &args.workers {
            let shape = Shape::new(1, workers);
            let mut figures: Vec<Vec<Figures>> = vec![Vec::new(); 1 + diagnosed.len()];
            for _ in 0..args.runs {
                for (run, figures) in std::iter::once(run).chain(&diagnosed).zip(&mut figures) {
                    let measured = run.run(&bin_dir, shape, Duration::from_secs(600));
                    figures.push(measured.unwrap_or_else(|error| panic!("{}: {error}", run.name)));
                }
            }
            for (with, measured) in diagnosed.iter().zip(&figures[1..]) {
                let name = with.name.replace(&report, "PATH");
                println!("{}", row(&name, workers, &figures[0], measured));
            }
        }
    }
    std::fs::remove_file(&report).ok();
}

/// One line of the table.
fn row(name: &str, workers: usize, without: &[Figures], with: &[Figures]) -> String {
    let median = |figures: &[Figures], of: fn(&Figures) -> f64| spread(figures.iter().map(of).collect()).1;
    let ratios: Vec<f64> = with
        .iter()
        .zip(without)
        .map(|(w, o)| w.throughput / o.throughput)
        .collect();
    let (low, ratio, high) = spread(ratios);
    format!(
        "| {name} | {workers} | {:.0} / {:.0} | {ratio:.3} ({low:.3}–{high:.3}) | {:.1} / {:.1} |",
        median(without, |f| f.throughput),
        median(with, |f| f.throughput),
        median(without, |f| f.p50_ms),
        median(with, |f| f.p50_ms),
    )
}
