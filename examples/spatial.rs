//! Continuous range queries (or spatio-textual ones, `--app textual`) over a
//! point stream, balanced by SWARM or on a static grid.
//!
//! ```text
//! cargo run --release --example spatial -- --policy swarm --workload hotspot \
//!     --points 200000 --queries 2000 -w 4 --report swarm.json
//! cargo run --release --example spatial -- --policy static:16 --input points.csv --bounds -180,-90,180,90
//! ```
//!
//! Each worker builds the dataflow in `worker` below: an input of records,
//! SWARM on it, and an operator of its own that counts each query's matches
//! per epoch from SWARM's output stream (and sums their digests, which the
//! report checks against other runs).
//!
//! Input lines (CSV): `p,<id>,<x>,<y>` a point; `q,<id>,<x1>,<y1>,<x2>,<y2>`
//! register a continuous range query; `r,<id>` remove it; `#` comments and
//! blank lines are skipped. The epoch of a line is its index divided by
//! `--batch`.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;

use clap::Parser;
use equipoise::common::cluster::ClusterArgs;
use equipoise::common::driver::run_gathered;
use equipoise::common::lines::OnError;
use equipoise::common::program::{check_work_us, write_report};
use equipoise::common::Error;
use equipoise::swarm::input::{read_spatial, SpatialInput};
use equipoise::swarm::job::{DecisionSpec, PolicySpec, SpatialJob, SpatialReport, WorkerFigures};
use equipoise::swarm::workload::Hotspots;
use equipoise::swarm::{Grid, Match, PartitionState, RangeQueries, Rect, SpatioTextual, Swarm};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::{Capability, Input, Operator, Probe};
use timely::dataflow::InputHandle;
use timely::worker::Worker;

/// Continuous range queries over a point stream, balanced by SWARM.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// `swarm`, `static` (one partition per worker), `static:<k>` (k blocks
    /// per worker spread over the space), or `forced:<seed>` (a random move,
    /// split or merge every round).
    #[arg(long, default_value = "swarm")]
    policy: String,
    /// How SWARM decides to rebalance: `threshold:<tau>` (when the busiest
    /// worker's cost exceeds tau × the mean) or `paper` (the five-stage
    /// mechanism, for reproduction).
    #[arg(long, default_value = "threshold:1.2")]
    decision: DecisionSpec,
    /// The space: x1,y1,x2,y2 (negative values as written: -180,-90,180,90).
    #[arg(long, default_value = "0,0,1000,1000", allow_hyphen_values = true)]
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
    /// The application: `range` (continuous range queries) or `textual`
    /// (spatio-textual: synthetic points and queries carry keywords).
    #[arg(long, default_value = "range")]
    app: String,
    /// Words in the vocabulary of `--app textual`.
    #[arg(long, default_value_t = 16)]
    vocabulary: u64,
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
    equipoise::common::program::exit_quietly_on_closed_stdout();
    match main_with(Args::parse()) {
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
    Grid::new(bounds, columns, rows).map_err(|e| Error::invalid("--grid", e.to_string()))
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

fn main_with(args: Args) -> Result<(), Error> {
    let work = check_work_us(args.work_us)?;
    let grid = parse_grid(&args.grid, parse_bounds(&args.bounds)?)?;
    let policy = parse_policy(&args.policy, args.decision)?;
    let hotspots = Hotspots {
        points: args.points,
        queries: args.queries,
        seed: args.seed,
        concentration: match args.workload.as_str() {
            "hotspot" => 0.9,
            "uniform" => 0.0,
            other => {
                return Err(Error::invalid(
                    "--workload",
                    format!("`{other}`: expected hotspot or uniform"),
                ))
            }
        },
        ..Hotspots::default()
    };
    let split_gain = parse_split_gain(&args.split_gain)?;
    let settings = SpatialJob {
        grid: grid.clone(),
        input: Arc::new(SpatialInput::default()),
        batch: args.batch,
        round: args.round,
        merge_every: args.merge_every,
        split_gain,
        work_per_check: work,
        policy,
        max_in_flight: args.max_in_flight,
        progress: !args.quiet,
    };
    // What the processes of a cluster must agree on to run one experiment.
    let mut cluster = args.cluster.clone();
    cluster.agree("--policy", &args.policy);
    cluster.agree("--decision", args.decision);
    cluster.agree("--bounds", &args.bounds);
    cluster.agree("--grid", &args.grid);
    cluster.agree("--input", &args.input);
    cluster.agree("--workload", &args.workload);
    cluster.agree("--app", &args.app);
    cluster.agree("--vocabulary", args.vocabulary);
    cluster.agree("--points", args.points);
    cluster.agree("--queries", args.queries);
    cluster.agree("--seed", args.seed);
    cluster.agree("--batch", args.batch);
    cluster.agree("--round", args.round);
    cluster.agree("--merge-every", args.merge_every);
    cluster.agree("--split-gain", &args.split_gain);
    cluster.agree("--on-error", args.on_error);
    let report = match (args.app.as_str(), &args.input) {
        ("range", Some(path)) => {
            run_app::<RangeQueries>(settings.with_input(read_spatial(path, &grid, args.on_error)?), &cluster)?
        }
        ("range", None) => run_app::<RangeQueries>(settings.with_input(hotspots.generate(&grid)), &cluster)?,
        ("textual", None) => {
            let input = hotspots.generate_textual(&grid, args.vocabulary);
            run_app::<SpatioTextual>(settings.with_input(input), &cluster)?
        }
        ("textual", Some(_)) => return Err(Error::invalid("--app", "textual runs on synthetic workloads only")),
        (other, _) => return Err(Error::invalid("--app", format!("`{other}`: expected range or textual"))),
    };
    if let Some(report) = report {
        print_summary(&report);
        if let Some(path) = &args.report {
            write_report(path, &report)?;
        }
    }
    Ok(())
}

/// Runs the job on every worker of the cluster; the report in the process
/// hosting worker 0.
fn run_app<S>(job: SpatialJob<S::Point, S::Query>, cluster: &ClusterArgs) -> Result<Option<SpatialReport>, Error>
where
    S: PartitionState<Output = Match>,
    S::Point: Sync,
    S::Query: Sync,
{
    job.check(cluster.total_workers())?;
    job.check_memory(cluster.workers)?;
    let (shared, processes) = (job.clone(), cluster.processes);
    run_gathered(
        cluster,
        move |worker| self::worker::<S>(worker, &shared),
        move |figures| job.assemble(processes, figures),
    )
}

/// An open epoch of the matches: its capability, each query's matches, and
/// the wrapping sum of their digests.
type Epoch = (Capability<u64>, HashMap<u64, u64>, u64);

/// One worker: the dataflow, then the epochs of its share of the records.
fn worker<S>(worker: &mut Worker, job: &SpatialJob<S::Point, S::Query>) -> WorkerFigures
where
    S: PartitionState<Output = Match>,
{
    let mut input = InputHandle::new();
    let config = job.config();
    // Matches and the wrapping sum of their digests, over finished epochs.
    let totals = Rc::new(RefCell::new((0u64, 0u64)));
    let sink = Rc::clone(&totals);
    let (handles, probe) = worker.dataflow::<u64, _, _>(|scope| {
        let (matches, handles) = scope
            .input_from(&mut input)
            .swarm::<S>(&config, job.policy())
            .expect("checked by job.check");
        // Per epoch: each query's matches, and the epoch's digest, emitted
        // once SWARM's output has passed the epoch.
        let per_query = matches.unary_frontier::<CapacityContainerBuilder<Vec<(u64, u64)>>, _, _, _>(
            Pipeline,
            "MatchesPerQuery",
            |_, _| {
                let mut epochs: BTreeMap<u64, Epoch> = BTreeMap::new();
                move |(input, frontier), output| {
                    input.for_each_stamp(|cap, batches| {
                        let Some(cap) = cap.retain_least(0) else { return };
                        let (_, counts, digest) = epochs.entry(*cap.time()).or_insert_with(|| (cap, HashMap::new(), 0));
                        for m in batches.flat_map(|batch| batch.drain(..)) {
                            *counts.entry(m.query).or_default() += 1;
                            *digest = digest.wrapping_add(m.digest());
                        }
                    });
                    while let Some(entry) = epochs.first_entry() {
                        if frontier.less_equal(entry.key()) {
                            break;
                        }
                        let (cap, counts, digest) = entry.remove();
                        let mut sink = sink.borrow_mut();
                        *sink = (sink.0 + counts.values().sum::<u64>(), sink.1.wrapping_add(digest));
                        output.session(&cap).give_iterator(counts.into_iter());
                    }
                }
            },
        );
        (handles, per_query.probe().0)
    });
    let times = job.feed(worker, input, &probe);
    let totals = *totals.borrow();
    WorkerFigures::of(&handles, totals, times)
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
