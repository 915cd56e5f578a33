//! A tour of equipoise on built-in defaults, each part a side-by-side
//! comparison measured on this machine.
//!
//! `cargo run --release --example tour`
//!
//! Part 1, Partial Key Grouping: a skewed word count (Zipf keys, real work per
//! record) under key grouping, shuffle grouping and PKG.
//!
//! Part 2, SWARM: continuous range queries over points drawn from the
//! world's real places by population and daylight, on static plans of 1
//! to 1 024 blocks per worker and under SWARM, against the best of the
//! static plans; then the balance at 16-64 worker threads, by work counts.
//!
//! Part 3, load shedding: input ramping up to 1.5× capacity, with no
//! shedding, the coarse algorithm, the paper's PI and `auto` (the default:
//! the capacity measured, the target a bound, late records dropped before
//! their work).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use equipoise::pkg::Scheme;
use equipoise::shed::design::{nominal_pi, NOMINAL_POLES};
use equipoise::swarm::RangeQueries;
use equipoise::swarm::{Grid, Rect};
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::common::Error;
use equipoise_lab::pkg::wordcount::{comparison_table, run_wordcount, KeySource, WordcountConfig};
use equipoise_lab::shed::job::{run_shedding, ControllerSpec, ShedJob};
use equipoise_lab::swarm::job::{run_spatial, DecisionSpec, PolicySpec, SpatialJob};
use equipoise_lab::swarm::places::Places;
use equipoise_lab::swarm::shape::shape;

/// The static plans SWARM is measured against: blocks per worker.
const STATIC_BLOCKS: [usize; 6] = [1, 4, 16, 64, 256, 1024];

/// The worker threads at which the SWARM part counts work.
const SCALING_WORKERS: [usize; 3] = [16, 32, 64];

/// The equipoise tour.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Worker threads (default: one per core, at least 2: more threads
    /// than cores share them, and imbalance then costs no throughput).
    #[arg(short = 'w', long = "workers", default_value_t = default_workers())]
    workers: usize,
    /// Keys of the word count.
    #[arg(long, default_value = "zipf:1.2:100000")]
    keys: KeySpec,
    /// Records of the word count.
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    /// Busy work per record in the counting stage, in microseconds.
    #[arg(long, default_value_t = 2.0)]
    work_us: f64,
    /// Points of the spatial part.
    #[arg(long, default_value_t = 200_000)]
    points: u64,
    /// Points of the spatial part at 16-64 worker threads (with one
    /// query per 200 points).
    #[arg(long, default_value_t = 1_000_000)]
    scaling_points: u64,
    /// Busy work per point–query check in the spatial part, in
    /// microseconds (an application's check, such as a keyword match).
    #[arg(long, default_value_t = 0.5)]
    check_us: f64,
}

/// The machine's cores (0 if it cannot tell).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(0, |cores| cores.get())
}

/// One worker per core, at least 2.
fn default_workers() -> usize {
    cores().max(2)
}

fn main() -> ExitCode {
    equipoise_lab::common::program::exit_quietly_on_closed_stdout();
    let args = Args::parse();
    let tour = wordcount_part(&args)
        .and_then(|()| swarm_part(&args))
        .and_then(|()| shedding_part());
    equipoise_lab::common::program::exit_code("tour", tour)
}

fn wordcount_part(args: &Args) -> Result<(), Error> {
    let sampler = Arc::new(KeySampler::new(&args.keys, 1));
    println!("equipoise tour, {} workers on {} cores\n", args.workers, cores());
    println!(
        "Part 1. Partial Key Grouping: word count of {} records, keys {} (hottest key {:.1} % of the stream), {} µs of work per record\n",
        args.records,
        args.keys,
        100.0 * sampler.probability(0),
        args.work_us
    );
    let mut reports = Vec::new();
    for grouping in [Scheme::Key, Scheme::Shuffle, Scheme::Pkg] {
        let source = KeySource::Synthetic {
            sampler: Arc::clone(&sampler),
            records: args.records,
        };
        let config = WordcountConfig {
            work: Duration::from_secs_f64(args.work_us / 1e6),
            top: 5,
            ..WordcountConfig::new(grouping, source)
        };
        reports.extend(run_wordcount(config, &ClusterArgs::threads(args.workers))?);
    }
    print!("{}", comparison_table(&reports));
    let [key, shuffle, pkg] = [&reports[0], &reports[1], &reports[2]];
    println!(
        "\n- load: the busiest worker has {:.2}x the mean under key grouping, {:.2}x under PKG",
        key.max_over_mean, pkg.max_over_mean
    );
    println!(
        "- memory: PKG keeps {} per-key partial states, key grouping {}, shuffle {}",
        pkg.partial_states, key.partial_states, shuffle.partial_states
    );
    let same = reports
        .iter()
        .all(|r| r.counts_digest == key.counts_digest && r.top == key.top);
    println!(
        "- results: counts digest {} and top-5 {} under all three groupings",
        key.counts_digest,
        if same { "identical" } else { "DIFFER (a bug)" }
    );
    Ok(())
}

fn swarm_part(args: &Args) -> Result<(), Error> {
    let grid = Grid::new(Rect::new(-180.0, -90.0, 180.0, 90.0)?, 64, 64)?;
    let queries = args.points / 100;
    let input = Arc::new(
        Places {
            points: args.points,
            queries,
            ..Places::default()
        }
        .generate(&grid),
    );
    let shape = shape(&input, &grid, 1_000);
    println!(
        "\nPart 2. SWARM: {} points drawn from the world's real places by population and daylight (the sun sweeping west), {} continuous range queries, 64 x 64 grid, {} µs per point-query check",
        args.points, queries, args.check_us
    );
    println!(
        "An epoch's busiest cell holds {:.1} % of its points (up to {:.1} %), {:.0} % of the cells are ever used, and the busiest cell changes {} times over {} epochs\n",
        100.0 * shape.top_cell_share[0],
        100.0 * shape.top_cell_share[2],
        100.0 * shape.cells_used,
        shape.top_cell_changes,
        shape.epochs
    );
    let mut reports = Vec::new();
    for policy in STATIC_BLOCKS
        .map(PolicySpec::StaticBlocks)
        .into_iter()
        .chain([PolicySpec::Swarm(DecisionSpec::Threshold(1.2))])
    {
        let job = SpatialJob {
            work_per_check: Duration::from_secs_f64(args.check_us / 1e6),
            policy,
            ..SpatialJob::new(grid.clone(), Arc::clone(&input))
        };
        reports.extend(run_spatial::<RangeQueries>(job, &ClusterArgs::threads(args.workers))?);
    }
    print!("{}", equipoise_lab::swarm::cli::comparison_table(&reports));
    let (plans, swarm) = reports.split_at(STATIC_BLOCKS.len());
    let swarm = &swarm[0];
    let (best_k, best) = STATIC_BLOCKS
        .iter()
        .zip(plans)
        .max_by(|(_, a), (_, b)| a.points_per_s.total_cmp(&b.points_per_s))
        .expect("static plans");
    println!(
        "\n- SWARM: {:.2}x the points/s of the best static plan ({best_k} blocks per worker), p99 epoch latency {:.2}x its, busiest worker {:.2}x the mean ({:.2}x), per epoch (p99) {:.2}x ({:.2}x)",
        swarm.points_per_s / best.points_per_s,
        swarm.latency_ms.p99 / best.latency_ms.p99,
        swarm.max_over_mean_work,
        best.max_over_mean_work,
        swarm.per_epoch_max_over_mean.p99,
        best.per_epoch_max_over_mean.p99
    );
    let same = reports.iter().all(|r| r.matches_digest == swarm.matches_digest);
    println!(
        "- results: matches digest {} under all {} plans ({})",
        swarm.matches_digest,
        reports.len(),
        if same { "identical" } else { "DIFFER (a bug)" }
    );
    swarm_scaling(&grid, args.scaling_points)
}

/// Balance at 16-64 worker threads, where this machine's cores cannot show
/// it as points/s: the work of the busiest worker against the mean, SWARM
/// beside the finest static plan (one cell per partition), over the
/// sweep of `points` points in epochs of 8 000 lines.
fn swarm_scaling(grid: &Grid, points: u64) -> Result<(), Error> {
    let queries = points / 200;
    let input = Arc::new(
        Places {
            points,
            queries,
            ..Places::default()
        }
        .generate(grid),
    );
    println!(
        "\nThe same kind of stream, {points} points and {queries} queries in epochs of 8 000 lines, at 16-64 worker threads: checks counted (no busy work)\n"
    );
    println!("| worker threads | plan | busiest / mean checks over the run | per epoch: median | p99 | the first epochs' worst |");
    println!("|---|---|---|---|---|---|");
    for workers in SCALING_WORKERS {
        let cells = grid.cell_count() / workers;
        for policy in [
            PolicySpec::StaticBlocks(cells),
            PolicySpec::Swarm(DecisionSpec::Threshold(1.2)),
        ] {
            let job = SpatialJob {
                batch: 8_000,
                policy,
                ..SpatialJob::new(grid.clone(), Arc::clone(&input))
            };
            if let Some(r) = run_spatial::<RangeQueries>(job, &ClusterArgs::threads(workers))? {
                let (epochs, start) = (r.per_epoch_max_over_mean, r.per_epoch_max_over_mean_start);
                let plan = match policy {
                    PolicySpec::StaticBlocks(_) => "one cell per partition".to_string(),
                    _ => "SWARM".to_string(),
                };
                println!(
                    "| {workers} | {plan} | {:.2} | {:.2} | {:.2} | {:.2} |",
                    r.max_over_mean_work, epochs.p50, epochs.p99, start.max
                );
            }
        }
    }
    Ok(())
}

fn shedding_part() -> Result<(), Error> {
    let (workers, cost_us, period_ms, target_ms, seconds) = (2usize, 20.0, 100.0, 300.0, 5.0);
    let capacity = workers as f64 * 1e6 / cost_us;
    let profile = format!("ramp:{}:{}:1:4", 0.5 * capacity, 1.5 * capacity);
    println!(
        "\nPart 3. Load shedding: {workers} workers at {cost_us} µs per record (capacity {capacity:.0}/s), input {profile}, target {target_ms} ms, {seconds} s\n"
    );
    let mut reports = Vec::new();
    for controller in [
        ControllerSpec::None,
        ControllerSpec::Coarse,
        ControllerSpec::Pi(nominal_pi(period_ms, capacity / workers as f64, NOMINAL_POLES)),
        ControllerSpec::Auto,
    ] {
        let job = ShedJob {
            target_ms,
            period_ms,
            duration_s: seconds,
            cost_us,
            // The baselines alone, every admitted record worked on; `auto`
            // as a user runs it, with the deadline.
            drop_late: controller == ControllerSpec::Auto,
            ..ShedJob::new(controller, profile.parse()?)
        };
        reports.push(run_shedding(job, workers)?);
    }
    print!("{}", equipoise_lab::shed::cli::comparison_table(&reports));
    let said = |r: &equipoise_lab::shed::job::ShedReport| {
        format!(
            "{} records over the target, p99 {:.0} ms, {:.1} % lost",
            r.delayed_records,
            r.delay_ms.p99,
            100.0 * r.loss_ratio
        )
    };
    println!(
        "\n- auto (the default): {} ({:.1} % arrive beyond capacity)\n- the paper's PI: {}\n- coarse (Aurora): {}\n- no shedding: p99 {:.0} ms",
        said(&reports[3]),
        100.0 * reports[3].ideal_loss_ratio,
        said(&reports[2]),
        said(&reports[1]),
        reports[0].delay_ms.p99
    );
    Ok(())
}
