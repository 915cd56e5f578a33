//! The spatial example's command line: its flags, checked, as the job and
//! the cluster they describe, and the summary it prints.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::common::cluster::ClusterArgs;
use crate::common::lines::OnError;
use crate::common::log_file::LogFile;
use crate::common::program::check_work_us;
use crate::common::Error;

use super::input::{read_spatial, SpatialInput};
use super::job::{DecisionSpec, PolicySpec, SpatialJob, SpatialReport};
use super::places::Places;
use super::workload::{with_keywords, Clustered, Hotspots};
use equipoise::swarm::Keywords;
use equipoise::swarm::{Grid, Rect};

/// Continuous range queries over a point stream, balanced by SWARM.
#[derive(clap::Parser, Debug)]
#[command(version)]
pub struct SpatialArgs {
    /// timely's cluster settings.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// `swarm`, `swarm:<k>` (SWARM starting from k blocks per worker),
    /// `static` (one partition per worker), `static:<k>` (k blocks per
    /// worker spread over the space), or `forced:<seed>` (a random move,
    /// split, merge, share or unshare every round).
    #[arg(long, default_value = "swarm")]
    pub policy: String,
    /// How SWARM decides to rebalance: `threshold:<tau>` (when the busiest
    /// worker's cost exceeds tau × the mean, or the same worker exceeds
    /// 1 + (tau − 1)/2 × the mean two rounds in a row) or `paper` (the
    /// five-stage mechanism, for reproduction).
    #[arg(long, default_value = "threshold:1.2")]
    pub decision: DecisionSpec,
    /// The space: x1,y1,x2,y2 (negative values as written: -180,-90,180,90).
    #[arg(long, default_value = "0,0,1000,1000", allow_hyphen_values = true)]
    pub bounds: String,
    /// Cells: C1xC2 (columns x rows).
    #[arg(long, default_value = "64x64")]
    pub grid: String,
    /// Read records from FILE instead of generating them.
    #[arg(long, value_name = "FILE", conflicts_with = "workload")]
    pub input: Option<PathBuf>,
    /// The synthetic workload: `hotspot` (points and queries around hotspots
    /// that move), `clustered` (around 300 centres of Zipf weights, a day
    /// band moving the points' weight among them), `places` (the world's
    /// places of 15 000 people or more, GeoNames, by population and
    /// daylight, the sun sweeping west; longitude and latitude over the
    /// space) or `uniform` (the same counts spread evenly).
    #[arg(long, default_value = "hotspot")]
    pub workload: String,
    /// The application: `range` (continuous range queries) or `textual`
    /// (spatio-textual: synthetic points and queries carry keywords).
    #[arg(long, default_value = "range")]
    pub app: String,
    /// Words in the vocabulary of `--app textual`.
    #[arg(long, default_value_t = 16)]
    pub vocabulary: u64,
    /// Synthetic points.
    #[arg(long, default_value_t = 200_000)]
    pub points: u64,
    /// Synthetic queries (about half are removed later).
    #[arg(long, default_value_t = 2_000)]
    pub queries: u64,
    /// Seed of the synthetic workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Lines per epoch (default: 500 per worker over all processes, at
    /// least 1 000, so that each worker gets about as many points per epoch
    /// at any scale).
    #[arg(long)]
    pub batch: Option<u64>,
    /// Epochs per load-balancing round (default: 2, and 1 from 16 workers).
    #[arg(long)]
    pub round: Option<u64>,
    /// Rounds ahead that the coordinator concludes each plan update: the
    /// epochs of those rounds run on while its messages travel (default:
    /// 1 in one process, 4 across processes).
    #[arg(long)]
    pub plan_depth: Option<u64>,
    /// Merge adjacent partitions every this many rounds.
    #[arg(long, default_value_t = 10)]
    pub merge_every: u64,
    /// SWARM also splits a partition in place when a split cuts its work by
    /// this share, and merges neighbours that cost little together; `off`:
    /// the paper's behaviour (split only to move load, merge all). With the
    /// built-in applications' measured costs no split cuts work: both behave
    /// as `off`.
    #[arg(long, default_value = "0.2")]
    pub split_gain: String,
    /// Run epoch 0 on the initial plan instead of planning it from its own
    /// records (SWARM's opening; see `--policy`).
    #[arg(long)]
    pub no_opening: bool,
    /// Busy work per point–query check, in microseconds.
    #[arg(long, default_value_t = 0.0)]
    pub work_us: f64,
    /// A malformed input line: fail naming it, or skip and count it.
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    pub on_error: OnError,
    /// Epochs a worker may have open before waiting for the oldest
    /// (default: 4 in one process, 16 across processes).
    #[arg(long)]
    pub max_in_flight: Option<u64>,
    /// Write the JSON report to PATH (from the process hosting worker 0).
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,
    /// The skew report's flags.
    #[command(flatten)]
    pub doctor: crate::common::doctor_args::DoctorArgs,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// The coordinator's decisions (timely log events), one JSON object a
    /// line (with several processes, process p writes FILE.p).
    #[arg(long)]
    pub log: Option<PathBuf>,
}

/// A run the flags describe: the application and its job.
pub enum SpatialRun {
    /// `--app range`.
    Range(SpatialJob),
    /// `--app textual`.
    Textual(SpatialJob<Keywords, Keywords>),
}

impl SpatialArgs {
    /// The run these flags describe, its input read or generated, and the
    /// cluster with every setting its processes must share.
    pub fn run(&self) -> Result<(SpatialRun, ClusterArgs), Error> {
        let args = self;
        let work = check_work_us(args.work_us)?;
        let grid = parse_grid(&args.grid, parse_bounds(&args.bounds)?)?;
        let policy = parse_policy(&args.policy, args.decision)?;
        let synthetic = |grid: &Grid| match args.workload.as_str() {
            "hotspot" | "uniform" => Ok(Hotspots {
                points: args.points,
                queries: args.queries,
                seed: args.seed,
                concentration: if args.workload == "hotspot" { 0.9 } else { 0.0 },
                ..Hotspots::default()
            }
            .generate(grid)),
            "clustered" => Ok(Clustered {
                points: args.points,
                queries: args.queries,
                seed: args.seed,
                ..Clustered::default()
            }
            .generate(grid)),
            "places" => Ok(Places {
                points: args.points,
                queries: args.queries,
                seed: args.seed,
                ..Places::default()
            }
            .generate(grid)),
            other => Err(Error::invalid(
                "--workload",
                format!("`{other}`: expected hotspot, clustered, places or uniform"),
            )),
        };
        let split_gain = parse_split_gain(&args.split_gain)?;
        let pipeline = Pipelining::for_processes(args.cluster.processes);
        let settings = SpatialJob {
            grid: grid.clone(),
            input: Arc::new(SpatialInput::default()),
            batch: args
                .batch
                .unwrap_or_else(|| default_batch(args.cluster.total_workers())),
            round: args.round,
            plan_depth: args.plan_depth.unwrap_or(pipeline.plan_depth),
            merge_every: args.merge_every,
            split_gain,
            opening: !args.no_opening,
            work_per_check: work,
            policy,
            max_in_flight: args.max_in_flight.unwrap_or(pipeline.max_in_flight),
            progress: !args.quiet,
            log: LogFile::for_flag(args.log.as_deref(), &args.cluster)?,
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
        cluster.agree("--batch", settings.batch);
        cluster.agree("--round", args.round);
        cluster.agree("--plan-depth", settings.plan_depth);
        cluster.agree("--merge-every", args.merge_every);
        cluster.agree("--split-gain", &args.split_gain);
        cluster.agree("--no-opening", args.no_opening);
        cluster.agree("--on-error", args.on_error);
        let run = match (args.app.as_str(), &args.input) {
            ("range", Some(path)) => SpatialRun::Range(settings.with_input(read_spatial(path, &grid, args.on_error)?)),
            ("range", None) => SpatialRun::Range(settings.with_input(synthetic(&grid)?)),
            ("textual", None) => {
                SpatialRun::Textual(settings.with_input(with_keywords(synthetic(&grid)?, args.vocabulary, args.seed)))
            }
            ("textual", Some(_)) => return Err(Error::invalid("--app", "textual runs on synthetic workloads only")),
            (other, _) => return Err(Error::invalid("--app", format!("`{other}`: expected range or textual"))),
        };
        Ok((run, cluster))
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
    match text.split_once(':') {
        None if text == "swarm" => Ok(PolicySpec::Swarm(decision)),
        Some(("swarm", k)) => match k.parse::<usize>() {
            Ok(k) if k >= 1 => Ok(PolicySpec::SwarmFrom(decision, k)),
            _ => Err(Error::invalid(
                "--policy",
                format!("swarm:`{k}`: partitions per worker to start from must be an integer ≥ 1"),
            )),
        },
        _ => text.parse(),
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

/// The summary the spatial example prints.
impl fmt::Display for SpatialReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = self;
        writeln!(
            f,
            "{} policy ({} decision), {} workers in {} processes: {} points, {} queries, {} removals",
            report.policy,
            report.decision,
            report.workers,
            report.processes,
            report.points,
            report.queries,
            report.removals
        )?;
        writeln!(
            f,
            "  {:.0} points/s in {:.2} s; epoch latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            report.points_per_s, report.elapsed_s, report.latency_ms.p50, report.latency_ms.p99, report.latency_ms.max
        )?;
        writeln!(
            f,
            "  point-query checks per worker {:?}: max/mean {:.3}",
            report.per_worker_work, report.max_over_mean_work
        )?;
        if let Some(shape) = &report.workload_shape {
            let [median, p90, most] = shape.top_cell_share;
            writeln!(
                f,
                "  workload: an epoch's busiest cell holds {:.1} % of its points (p90 {:.1} %, max {:.1} %); {:.0} % of cells used; the busiest cell changed {} times over {} epochs",
                median * 100.0,
                p90 * 100.0,
                most * 100.0,
                shape.cells_used * 100.0,
                shape.top_cell_changes,
                shape.epochs
            )?;
        }
        let m = &report.migrations;
        writeln!(
            f,
            "  {} rounds, {} rebalanced: {} moves, {} splits, {} merges, {} shares, {} unshares, {} partitions ({} bytes) moved; {} partitions at the end",
            report.rounds,
            report.rebalanced_rounds,
            m.moves,
            m.splits,
            m.merges,
            m.shares,
            m.unshares,
            m.partitions_moved,
            m.bytes_moved,
            report.partitions_final
        )?;
        writeln!(f, "  {} matches, digest {}", report.matches, report.matches_digest)?;
        if report.skipped_lines > 0 {
            writeln!(f, "  skipped {} malformed lines", report.skipped_lines)?;
        }
        Ok(())
    }
}

/// Reports side by side, one row per run, as a Markdown table.
pub fn comparison_table(reports: &[SpatialReport]) -> String {
    let mut table = String::from(
        "| policy | points/s | p50 ms | p99 ms | max/mean checks | rebalanced rounds | partitions moved | matches |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in reports {
        table.push_str(&format!(
            "| {} | {:.0} | {:.1} | {:.1} | {:.2} | {} of {} | {} | {} |\n",
            r.policy,
            r.points_per_s,
            r.latency_ms.p50,
            r.latency_ms.p99,
            r.max_over_mean_work,
            r.rebalanced_rounds,
            r.rounds,
            r.migrations.partitions_moved,
            r.matches
        ));
    }
    table
}

/// How far a run pipelines its epochs when `--plan-depth` and
/// `--max-in-flight` are not given. Neither changes a result, so both are
/// chosen from the number of processes: across processes every round's
/// messages to the coordinator and every epoch's progress cross TCP, and
/// a shallow pipeline waits on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pipelining {
    /// Rounds ahead that plan updates are concluded.
    pub plan_depth: u64,
    /// Epochs a worker may have open.
    pub max_in_flight: u64,
}

impl Pipelining {
    /// The defaults for `processes` processes.
    pub fn for_processes(processes: usize) -> Self {
        match processes {
            0 | 1 => Pipelining {
                plan_depth: 1,
                max_in_flight: 4,
            },
            _ => Pipelining {
                plan_depth: 4,
                max_in_flight: 16,
            },
        }
    }
}

/// Lines per epoch for `workers` workers when `--batch` is not given: 500
/// per worker, at least 1 000. Measured on a 16-core machine, 1 000-line
/// epochs left 16 workers about 60 points each and ran fewer points/s than
/// 8 workers (920 k against 1.09 M); 8 000 lines ran 1.39 M.
pub fn default_batch(workers: usize) -> u64 {
    (500 * workers as u64).max(1_000)
}
