//! Continuous range queries over a point stream, balanced by SWARM or on a
//! static grid.
//!
//! ```text
//! cargo run --release --example spatial -- --policy swarm --workload hotspot \
//!     --points 200000 --queries 2000 -w 4 --report swarm.json
//! cargo run --release --example spatial -- --policy static --input points.csv --bounds 0,0,100,100
//! ```
//!
//! Input lines (CSV): `p,<id>,<x>,<y>` a point; `q,<id>,<x1>,<y1>,<x2>,<y2>`
//! register a continuous range query; `r,<id>` remove it; `#` comments and
//! blank lines are skipped. The epoch of a line is its index divided by
//! `--batch`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use equipoise::common::cluster::ClusterArgs;
use equipoise::common::lines::OnError;
use equipoise::common::report::{check_work_us, write_report};
use equipoise::common::Error;
use equipoise::swarm::geometry::{Grid, Rect};
use equipoise::swarm::input::read_spatial;
use equipoise::swarm::job::{run_spatial, DecisionSpec, PolicySpec, SpatialJob, SpatialReport};
use equipoise::swarm::workload::Hotspots;
use equipoise::swarm::RangeQueries;

/// Continuous range queries over a point stream, balanced by SWARM.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// `swarm`, `static`, or `forced:<seed>` (a random move, split or merge every round).
    #[arg(long, default_value = "swarm")]
    policy: String,
    /// How SWARM decides to rebalance: `paper` (five stages) or `threshold:<tau>`.
    #[arg(long, default_value = "paper")]
    decision: DecisionSpec,
    /// The space: x1,y1,x2,y2.
    #[arg(long, default_value = "0,0,1000,1000")]
    bounds: String,
    /// Cells: C1xC2 (columns x rows).
    #[arg(long, default_value = "64x64")]
    grid: String,
    /// Read records from FILE instead of generating them.
    #[arg(long, value_name = "FILE", conflicts_with = "workload")]
    input: Option<PathBuf>,
    /// The synthetic workload: `hotspot` (points and queries around hotspots
    /// that move) or `uniform` (the same counts spread evenly).
    #[arg(long, default_value = "hotspot")]
    workload: String,
    /// Synthetic points.
    #[arg(long, default_value_t = 200_000)]
    points: u64,
    /// Synthetic queries (about half are removed later).
    #[arg(long, default_value_t = 2_000)]
    queries: u64,
    /// Seed of the synthetic workload.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Lines per epoch.
    #[arg(long, default_value_t = 1_000)]
    batch: u64,
    /// Epochs per load-balancing round.
    #[arg(long, default_value_t = 2)]
    round: u64,
    /// Merge adjacent partitions every this many rounds.
    #[arg(long, default_value_t = 10)]
    merge_every: u64,
    /// SWARM also splits a partition in place when a split cuts its work by
    /// this share, and merges neighbours that cost little together; `off`:
    /// the paper's behaviour (split only to move load, merge all).
    #[arg(long, default_value = "0.2")]
    split_gain: String,
    /// Busy work per point–query check, in microseconds.
    #[arg(long, default_value_t = 0.0)]
    work_us: f64,
    /// A malformed input line: fail naming it, or skip and count it.
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    on_error: OnError,
    /// Epochs a worker may have open before waiting for the oldest.
    #[arg(long, default_value_t = 4)]
    max_in_flight: u64,
    /// Write the JSON report to PATH (from the process hosting worker 0).
    #[arg(long, value_name = "PATH")]
    report: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long)]
    quiet: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("spatial: {error}");
            ExitCode::FAILURE
        }
    }
}

fn parse_bounds(text: &str) -> Result<Rect, Error> {
    let values: Vec<f64> = text
        .split(',')
        .map(|v| v.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| Error::invalid("--bounds", format!("`{text}`: expected x1,y1,x2,y2")))?;
    match values[..] {
        [x1, y1, x2, y2] => Rect::new(x1, y1, x2, y2).map_err(|e| Error::invalid("--bounds", e.to_string())),
        _ => Err(Error::invalid("--bounds", format!("`{text}`: expected four numbers"))),
    }
}

fn parse_grid(text: &str, bounds: Rect) -> Result<Grid, Error> {
    let (columns, rows) = text
        .split_once('x')
        .and_then(|(c, r)| Some((c.parse::<u32>().ok()?, r.parse::<u32>().ok()?)))
        .ok_or_else(|| Error::invalid("--grid", format!("`{text}`: expected C1xC2, e.g. 64x64")))?;
    Grid::new(bounds, columns, rows)
}

fn parse_policy(text: &str, decision: DecisionSpec) -> Result<PolicySpec, Error> {
    if text == "swarm" {
        Ok(PolicySpec::Swarm(decision))
    } else {
        text.parse()
    }
}

fn parse_split_gain(text: &str) -> Result<Option<f64>, Error> {
    match text {
        "off" => Ok(None),
        _ => match text.parse::<f64>() {
            Ok(gain) if gain.is_finite() && gain > 0.0 => Ok(Some(gain)),
            _ => Err(Error::invalid(
                "--split-gain",
                format!("`{text}`: expected a share > 0 or off"),
            )),
        },
    }
}

fn run(args: Args) -> Result<(), Error> {
    let work = check_work_us(args.work_us)?;
    let grid = parse_grid(&args.grid, parse_bounds(&args.bounds)?)?;
    let policy = parse_policy(&args.policy, args.decision)?;
    let input = match &args.input {
        Some(path) => read_spatial(path, &grid, args.on_error)?,
        None if args.workload == "hotspot" || args.workload == "uniform" => Hotspots {
            points: args.points,
            queries: args.queries,
            seed: args.seed,
            concentration: if args.workload == "uniform" { 0.0 } else { 0.9 },
            ..Hotspots::default()
        }
        .generate(&grid),
        None => {
            return Err(Error::invalid(
                "--workload",
                format!("`{}`: expected hotspot or uniform", args.workload),
            ))
        }
    };
    let job = SpatialJob {
        grid,
        input: Arc::new(input),
        batch: args.batch,
        round: args.round,
        merge_every: args.merge_every,
        split_gain: parse_split_gain(&args.split_gain)?,
        work_per_check: work,
        policy,
        max_in_flight: args.max_in_flight,
        progress: !args.quiet,
    };
    if let Some(report) = run_spatial::<RangeQueries>(job, &args.cluster)? {
        print_summary(&report);
        if let Some(path) = &args.report {
            write_report(path, &report)?;
        }
    }
    Ok(())
}

fn print_summary(report: &SpatialReport) {
    println!(
        "{} policy ({} decision), {} workers in {} processes: {} points, {} queries, {} removals",
        report.policy,
        report.decision,
        report.workers,
        report.processes,
        report.points,
        report.queries,
        report.removals
    );
    println!(
        "  {:.0} points/s in {:.2} s; epoch latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        report.points_per_s, report.elapsed_s, report.latency_ms.p50, report.latency_ms.p99, report.latency_ms.max
    );
    println!(
        "  point-query checks per worker {:?}: max/mean {:.3}",
        report.per_worker_work, report.max_over_mean_work
    );
    let m = &report.migrations;
    println!(
        "  {} rounds, {} rebalanced: {} moves, {} splits, {} merges, {} partitions ({} bytes) moved; {} partitions at the end",
        report.rounds, report.rebalanced_rounds, m.moves, m.splits, m.merges, m.partitions_moved, m.bytes_moved, report.partitions_final
    );
    println!("  {} matches, digest {}", report.matches, report.matches_digest);
    if report.skipped_lines > 0 {
        println!("  skipped {} malformed lines", report.skipped_lines);
    }
}
