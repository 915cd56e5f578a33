//! SWARM against the best of a family of fine static plans, on a moving
//! hotspot, clustered places, the world's real places and uniform data, the cost of migrations, and balance at 8 and
//! 16 workers.
//!
//! `cargo bench --bench swarm_balance -- [--points N] [--queries N] [--work-us X] [--rounds R] [--scale] [--workloads hotspot,clustered,places,uniform] [--workers 2,4] [--decisions paper,threshold:1.2] [--grid CxR] [--finer] [--batch LINES] [--in-flight N] [--plan-depth N] [--scaling 1,2,4,...,64 [--only-scaling]] [--no-opening]`
//!
//! `--scaling` adds a scaling report: per worker count, SWARM and the static
//! plan of one cell per partition, with the speed-up their balance allows at
//! most (total checks ÷ the busiest worker's, over the run and with every
//! epoch a barrier) beside the points/s measured. The bound counts work, not
//! time, so it shows scale on any machine; points/s needs a core per worker.
//!
//! Every configuration runs once per round, in rotating order, so machine
//! noise hits all alike; the tables show, per configuration, the run with
//! the median points/s. Every run's matches digest is checked against the
//! others on the same workload.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use equipoise::swarm::RangeQueries;
use equipoise::swarm::{Grid, Rect};
use equipoise_lab::common::cluster::ClusterArgs;
use equipoise_lab::common::median::{median_by, spread};
use equipoise_lab::swarm::input::SpatialInput;
use equipoise_lab::swarm::job::{run_spatial, DecisionSpec, PolicySpec, SpatialJob, SpatialReport};
use equipoise_lab::swarm::places::Places;
use equipoise_lab::swarm::workload::{Clustered, Hotspots};

#[derive(Parser, Debug)]
struct Args {
    #[arg(long, default_value_t = 400_000)]
    points: u64,
    #[arg(long, default_value_t = 4_000)]
    queries: u64,
    /// Busy work per point–query check, µs.
    #[arg(long, default_value_t = 0.02)]
    work_us: f64,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Also run the hotspot at 8 and 16 workers: static:64, one cell per
    /// partition, and SWARM, with a table of per-epoch balance.
    #[arg(long)]
    scale: bool,
    /// Only these workloads (comma-separated: hotspot, clustered, places, uniform).
    #[arg(long, value_delimiter = ',', default_values_t = [String::from("hotspot"), String::from("clustered"), String::from("places"), String::from("uniform")])]
    workloads: Vec<String>,
    /// Cells: CxR (columns x rows) over a 1000 x 1000 space.
    #[arg(long, default_value = "64x64")]
    grid: String,
    /// Also run static plans finer than 64 blocks per worker: 256, 1024, ...
    /// up to one cell per partition.
    #[arg(long)]
    finer: bool,
    /// SWARM's decisions to run (comma-separated: `threshold:<tau>`, `paper`).
    /// A decision named twice runs twice, labelled `(again)`: the spread
    /// between the two is the machine's noise on identical runs.
    #[arg(long, value_delimiter = ',', default_values_t = [DecisionSpec::Paper, DecisionSpec::Threshold(1.2)])]
    decisions: Vec<DecisionSpec>,
    /// Only these worker counts of the main table (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [2, 4])]
    workers: Vec<usize>,
    /// Lines per epoch.
    #[arg(long, default_value_t = 1000)]
    batch: u64,
    /// Epochs in flight.
    #[arg(long, default_value_t = 4)]
    in_flight: u64,
    /// Rounds ahead that SWARM concludes its plan updates.
    #[arg(long, default_value_t = 1)]
    plan_depth: u64,
    /// Worker counts of the scaling report (comma-separated).
    #[arg(long, value_delimiter = ',')]
    scaling: Vec<usize>,
    /// Only the scaling report (no main table at `--workers`).
    #[arg(long)]
    only_scaling: bool,
    /// SWARM runs epoch 0 on its initial plan (no opening).
    #[arg(long)]
    no_opening: bool,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Clone)]
struct Config {
    workload: &'static str,
    input: Arc<SpatialInput>,
    policy: PolicySpec,
    workers: usize,
    /// A repeat of an earlier configuration.
    again: bool,
}

const STATIC_K: [usize; 4] = [1, 4, 16, 64];

/// Adds a configuration, marked `again` if the same one is already there.
fn push(
    configs: &mut Vec<Config>,
    workload: &'static str,
    input: &Arc<SpatialInput>,
    policy: PolicySpec,
    workers: usize,
) {
    let again = configs
        .iter()
        .any(|c| c.workload == workload && c.workers == workers && c.policy == policy);
    configs.push(Config {
        workload,
        input: Arc::clone(input),
        policy,
        workers,
        again,
    });
}

impl Config {
    fn label(&self) -> String {
        match self.policy {
            PolicySpec::Swarm(decision) if self.again => format!("swarm ({decision}) (again)"),
            PolicySpec::Swarm(decision) => format!("swarm ({decision})"),
            PolicySpec::SwarmFrom(decision, k) => format!("swarm:{k} ({decision})"),
            other => other.to_string(),
        }
    }
}

fn main() {
    let args = Args::parse();
    let (columns, rows) = args
        .grid
        .split_once('x')
        .and_then(|(c, r)| Some((c.parse::<u32>().ok()?, r.parse::<u32>().ok()?)))
        .unwrap_or_else(|| panic!("--grid {}: expected CxR, e.g. 64x64", args.grid));
    let grid = Grid::new(Rect::new(0.0, 0.0, 1000.0, 1000.0).unwrap(), columns, rows).unwrap();
    let cells = columns as usize * rows as usize;
    let workload = |concentration: f64| {
        Arc::new(
            Hotspots {
                points: args.points,
                queries: args.queries,
                concentration,
                ..Hotspots::default()
            }
            .generate(&grid),
        )
    };
    let (hotspot, uniform) = (workload(0.9), workload(0.0));
    let clustered = Arc::new(
        Clustered {
            points: args.points,
            queries: args.queries,
            ..Clustered::default()
        }
        .generate(&grid),
    );
    let places = Arc::new(
        Places {
            points: args.points,
            queries: args.queries,
            ..Places::default()
        }
        .generate(&grid),
    );
    // The workloads asked for, by name.
    let workloads: Vec<(&'static str, &Arc<SpatialInput>)> = [
        ("hotspot", &hotspot),
        ("clustered", &clustered),
        ("places", &places),
        ("uniform", &uniform),
    ]
    .into_iter()
    .filter(|(name, _)| args.workloads.iter().any(|w| w == name))
    .collect();
    let swarms: Vec<PolicySpec> = args.decisions.iter().copied().map(PolicySpec::Swarm).collect();
    let mut configs = Vec::new();
    for &(name, input) in &workloads {
        for &workers in args.workers.iter().filter(|_| !args.only_scaling) {
            // Finer plans: powers of 4 from 256 blocks per worker, then one cell per partition.
            let per_cell = cells / workers;
            let finer = std::iter::successors(Some(256), |k| Some(k * 4))
                .take_while(|&k| k < per_cell)
                .chain([per_cell])
                .filter(|&k| args.finer && k > 64);
            let policies = STATIC_K
                .iter()
                .copied()
                .chain(finer)
                .map(PolicySpec::StaticBlocks)
                .chain(swarms.iter().copied());
            for policy in policies {
                push(&mut configs, name, input, policy, workers);
            }
        }
    }
    for &(name, input) in &workloads {
        for &workers in &args.scaling {
            // The one-cell static plan, SWARM, and SWARM starting from the one-cell plan.
            let per_cell = (cells / workers).max(1);
            let from_cells = args
                .decisions
                .iter()
                .map(|&decision| PolicySpec::SwarmFrom(decision, per_cell));
            let policies = [PolicySpec::StaticBlocks(per_cell)]
                .into_iter()
                .chain(swarms.iter().copied())
                .chain(from_cells);
            for policy in policies {
                push(&mut configs, name, input, policy, workers);
            }
        }
    }
    if args.scale {
        for workers in [8, 16] {
            // 64 blocks per worker, one cell per partition, and SWARM.
            let statics = [64, cells / workers].map(PolicySpec::StaticBlocks);
            for policy in statics.into_iter().chain(swarms.iter().copied()) {
                push(&mut configs, "hotspot", &hotspot, policy, workers);
            }
        }
    }
    let mut runs: Vec<Vec<SpatialReport>> = vec![Vec::new(); configs.len()];
    for round in 0..args.rounds {
        for offset in 0..configs.len() {
            let index = (offset + round) % configs.len();
            let c = &configs[index];
            let job = SpatialJob {
                grid: grid.clone(),
                input: Arc::clone(&c.input),
                batch: args.batch,
                round: None,
                plan_depth: args.plan_depth,
                merge_every: 10,
                split_gain: Some(0.2),
                opening: !args.no_opening,
                work_per_check: Duration::from_secs_f64(args.work_us / 1e6),
                policy: c.policy,
                max_in_flight: args.in_flight,
                progress: false,
                log: None,
            };
            runs[index].push(
                run_spatial::<RangeQueries>(job, &ClusterArgs::threads(c.workers))
                    .unwrap()
                    .unwrap(),
            );
        }
    }
    for (c, reports) in configs.iter().zip(&runs) {
        let reference = configs
            .iter()
            .position(|other| Arc::ptr_eq(&other.input, &c.input))
            .expect("itself");
        assert!(
            reports
                .iter()
                .all(|r| r.matches_digest == runs[reference][0].matches_digest),
            "{} {}: results differ",
            c.workload,
            c.label()
        );
    }
    let spreads: Vec<(f64, f64, f64)> = runs
        .iter()
        .map(|reports| spread(reports.iter().map(|r| r.points_per_s).collect()))
        .collect();
    let rates: Vec<Vec<f64>> = runs
        .iter()
        .map(|reports| reports.iter().map(|r| r.points_per_s).collect())
        .collect();
    let medians: Vec<SpatialReport> = runs
        .into_iter()
        .map(|reports| median_by(reports, |r| r.points_per_s))
        .collect();
    println!(
        "SWARM vs static plans of k blocks per worker: {} points, {} queries, {} grid, epochs of {} lines ({} in flight), SWARM's default rounds (2 epochs, 1 from 16 workers), {} µs per check, {} rounds (median run shown, points/s range in brackets)",
        args.points, args.queries, args.grid, args.batch, args.in_flight, args.work_us, args.rounds
    );
    println!("| workload | workers | policy | points/s | p50 ms | p99 ms | max/mean checks | per-epoch max/mean p50 / p99 / max | checks (M) | rebalanced rounds | moves / splits / merges | partitions at the end | KiB moved |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for ((c, r), (low, _, high)) in configs.iter().zip(&medians).zip(&spreads) {
        let m = &r.migrations;
        println!(
            "| {} | {} | {} | {:.0} [{:.0}–{:.0}] | {:.1} | {:.1} | {:.3} | {:.2} / {:.2} / {:.2} | {:.1} | {} of {} | {} / {} / {} | {} | {:.0} |",
            c.workload,
            c.workers,
            c.label(),
            r.points_per_s,
            low,
            high,
            r.latency_ms.p50,
            r.latency_ms.p99,
            r.max_over_mean_work,
            r.per_epoch_max_over_mean.p50,
            r.per_epoch_max_over_mean.p99,
            r.per_epoch_max_over_mean.max,
            r.per_worker_work.iter().sum::<u64>() as f64 / 1e6,
            r.rebalanced_rounds,
            r.rounds,
            m.moves,
            m.splits,
            m.merges,
            r.partitions_final,
            m.bytes_moved as f64 / 1024.0
        );
    }
    println!();
    println!("Migration cost (epochs within one epoch of a plan change taking effect vs the rest):");
    println!(
        "| workload | workers | policy | around changes p99 / max ms | steady p99 / max ms | KiB per moved partition |"
    );
    println!("|---|---|---|---|---|---|");
    for (c, r) in configs.iter().zip(&medians) {
        if let PolicySpec::Swarm(_) = c.policy {
            let per = if r.migrations.partitions_moved > 0 {
                r.migrations.bytes_moved as f64 / 1024.0 / r.migrations.partitions_moved as f64
            } else {
                0.0
            };
            println!(
                "| {} | {} | {} | {:.1} / {:.1} | {:.1} / {:.1} | {per:.1} |",
                c.workload,
                c.workers,
                c.label(),
                r.latency_around_changes_ms.p99,
                r.latency_around_changes_ms.max,
                r.latency_steady_ms.p99,
                r.latency_steady_ms.max
            );
        }
    }
    let is_static_of = |c: &Config, s: &Config, finer: bool| match s.policy {
        PolicySpec::StaticBlocks(k) => {
            s.workload == c.workload && s.workers == c.workers && (finer || STATIC_K.contains(&k))
        }
        _ => false,
    };
    let best_static = |c: &Config, finer: bool| {
        configs
            .iter()
            .enumerate()
            .filter(|(_, s)| is_static_of(c, s, finer))
            .max_by(|(a, _), (b, _)| medians[*a].points_per_s.total_cmp(&medians[*b].points_per_s))
            .map(|(b, _)| b)
    };
    // Runs of one round are neighbours in time: their ratio cancels the machine's drift.
    let paired = |i: usize, b: usize| spread(rates[i].iter().zip(&rates[b]).map(|(w, s)| w / s).collect());
    println!();
    println!("SWARM against the best static plan (k in {STATIC_K:?}) of the same workload and workers:");
    println!(
        "| workload | workers | best static | policy | points/s ratio | paired ratio [range] | p99 ms (vs best static) | max/mean checks |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (i, c) in configs.iter().enumerate() {
        if !matches!(c.policy, PolicySpec::Swarm(_)) {
            continue;
        }
        let Some(b) = best_static(c, false) else { continue };
        let (w, st) = (&medians[i], &medians[b]);
        let (low, mid, high) = paired(i, b);
        println!(
            "| {} | {} | {} | {} | {:.2} | {mid:.2} [{low:.2}–{high:.2}] | {:.1} ({:.1}) | {:.3} |",
            c.workload,
            c.workers,
            configs[b].policy,
            c.label(),
            w.points_per_s / st.points_per_s,
            w.latency_ms.p99,
            st.latency_ms.p99,
            w.max_over_mean_work
        );
    }
    if args.finer {
        println!();
        println!("SWARM against the best of every static plan run, and the worst (the cost of a wrong k):");
        println!("| workload | workers | policy | best static | ratio to it (paired) | p99 ms (best static's) | p99 ratio | worst static | ratio to it |");
        println!("|---|---|---|---|---|---|---|---|---|");
        for (i, c) in configs.iter().enumerate() {
            if !matches!(c.policy, PolicySpec::Swarm(_)) {
                continue;
            }
            let Some(b) = best_static(c, true) else { continue };
            let worst = configs
                .iter()
                .enumerate()
                .filter(|(_, s)| is_static_of(c, s, true))
                .min_by(|(a, _), (b, _)| medians[*a].points_per_s.total_cmp(&medians[*b].points_per_s))
                .map(|(b, _)| b)
                .expect("the best exists");
            let ratio = |b: usize| medians[i].points_per_s / medians[b].points_per_s;
            let (p99, best_p99) = (medians[i].latency_ms.p99, medians[b].latency_ms.p99);
            println!(
                "| {} | {} | {} | {} | {:.2} ({:.2}) | {p99:.1} ({best_p99:.1}) | {:.2} | {} | {:.1} |",
                c.workload,
                c.workers,
                c.label(),
                configs[b].policy,
                ratio(b),
                paired(i, b).1,
                p99 / best_p99,
                configs[worst].policy,
                ratio(worst)
            );
        }
    }
    if args.scale {
        println!();
        println!("Per-epoch balance at 8 and 16 workers, over the whole run and from the tenth round on:");
        println!("| workload | workers | policy | points/s | per-epoch max/mean p50 / p99 / max | from round 10: p50 / p99 / max |");
        println!("|---|---|---|---|---|---|");
        for (c, r) in configs.iter().zip(&medians).filter(|(c, _)| c.workers >= 8) {
            let (a, b) = (&r.per_epoch_max_over_mean, &r.per_epoch_max_over_mean_steady);
            println!(
                "| {} | {} | {} | {:.0} | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} / {:.2} |",
                c.workload,
                c.workers,
                c.label(),
                r.points_per_s,
                a.p50,
                a.p99,
                a.max,
                b.p50,
                b.p99,
                b.max
            );
        }
    }
    if !args.scaling.is_empty() {
        println!();
        println!("Scaling: the speed-up each plan's balance allows at most (total checks ÷ the busiest worker's, over the run and with every epoch a barrier) beside points/s and its speed-up over 1 worker measured here:");
        println!("| workload | workers | policy | points/s | measured speed-up | bound, run | bound, epochs | per-epoch max/mean p99 | the same from round 10 |");
        println!("|---|---|---|---|---|---|---|---|---|");
        for (c, r) in configs
            .iter()
            .zip(&medians)
            .filter(|(c, _)| args.scaling.contains(&c.workers))
        {
            // The same policy kind on one worker, if measured.
            let alone = configs.iter().zip(&medians).find(|(o, _)| {
                o.workers == 1
                    && o.workload == c.workload
                    && std::mem::discriminant(&o.policy) == std::mem::discriminant(&c.policy)
                    && !o.again
            });
            let speedup = alone.map_or(String::from("-"), |(_, a)| {
                format!("{:.2}", r.points_per_s / a.points_per_s)
            });
            println!(
                "| {} | {} | {} | {:.0} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
                c.workload,
                c.workers,
                c.label(),
                r.points_per_s,
                speedup,
                r.speedup_bound,
                r.speedup_bound_epochs,
                r.per_epoch_max_over_mean.p99,
                r.per_epoch_max_over_mean_steady.p99
            );
        }
    }
}
