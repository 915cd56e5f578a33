//! SWARM vs static partitioning on the moving hotspot, the cost of
//! migrations, and the overhead on a steady uniform workload.
//!
//! `cargo bench --bench swarm_balance -- [--points N] [--queries N] [--rounds R]`
//!
//! Every configuration runs once per round, in rotating order, so machine
//! noise hits all alike; the tables show, per configuration, the run with
//! the median points/s. Every run's matches digest is checked against the
//! others on the same workload.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use equipoise::common::cluster::ClusterArgs;
use equipoise::common::median::median_by;
use equipoise::swarm::geometry::{Grid, Rect};
use equipoise::swarm::input::SpatialInput;
use equipoise::swarm::job::{run_spatial, DecisionSpec, PolicySpec, SpatialJob, SpatialReport};
use equipoise::swarm::workload::Hotspots;

#[derive(Parser, Debug)]
struct Args {
    #[arg(long, default_value_t = 400_000)]
    points: u64,
    #[arg(long, default_value_t = 4_000)]
    queries: u64,
    /// Busy work per point–query check for the throughput runs, µs.
    #[arg(long, default_value_t = 0.02)]
    work_us: f64,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Clone)]
struct Config {
    label: &'static str,
    input: Arc<SpatialInput>,
    policy: PolicySpec,
    workers: usize,
    work_us: f64,
}

fn main() {
    let args = Args::parse();
    let grid = Grid::new(Rect::new(0.0, 0.0, 1000.0, 1000.0).unwrap(), 64, 64).unwrap();
    let hotspot = Arc::new(
        Hotspots {
            points: args.points,
            queries: args.queries,
            ..Hotspots::default()
        }
        .generate(&grid),
    );
    let uniform = Arc::new(
        Hotspots {
            points: args.points,
            queries: args.queries,
            concentration: 0.0,
            ..Hotspots::default()
        }
        .generate(&grid),
    );
    let paper = PolicySpec::Swarm(DecisionSpec::Paper);
    let threshold = PolicySpec::Swarm(DecisionSpec::Threshold(1.2));
    let mut configs = Vec::new();
    for (label, input, workers, work_us) in [
        ("hotspot, 4 workers", &hotspot, 4, 0.0),
        ("hotspot, 2 workers", &hotspot, 2, args.work_us),
        ("uniform, 2 workers", &uniform, 2, args.work_us),
    ] {
        for policy in [PolicySpec::Static, paper, threshold] {
            configs.push(Config {
                label,
                input: Arc::clone(input),
                policy,
                workers,
                work_us,
            });
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
                batch: 1000,
                round: 2,
                merge_every: 10,
                split_gain: Some(0.2),
                work_per_check: Duration::from_secs_f64(c.work_us / 1e6),
                policy: c.policy,
                max_in_flight: 4,
                progress: false,
            };
            runs[index].push(run_spatial(job, &ClusterArgs::threads(c.workers)).unwrap().unwrap());
        }
    }
    for (c, reports) in configs.iter().zip(&runs) {
        let reference = if Arc::ptr_eq(&c.input, &hotspot) {
            &runs[0][0]
        } else {
            &runs[runs.len() - 3][0]
        };
        assert!(
            reports.iter().all(|r| r.matches_digest == reference.matches_digest),
            "{}: results differ",
            c.label
        );
    }
    let medians: Vec<SpatialReport> = runs
        .into_iter()
        .map(|reports| median_by(reports, |r| r.points_per_s))
        .collect();
    println!(
        "SWARM vs static: {} points, {} queries, 64 x 64 grid, epochs of 1000 lines, rounds of 2 epochs, {} rounds (median run shown)",
        args.points, args.queries, args.rounds
    );
    println!("| workload | policy | work µs/check | points/s | p50 ms | p99 ms | max/mean checks | checks (M) | rebalanced rounds | moves / splits / merges | partitions moved | KiB moved |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (c, r) in configs.iter().zip(&medians) {
        let m = &r.migrations;
        println!(
            "| {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.3} | {:.1} | {} of {} | {} / {} / {} | {} | {:.0} |",
            c.label,
            match c.policy {
                PolicySpec::Swarm(decision) => format!("swarm ({decision})"),
                other => other.to_string(),
            },
            c.work_us,
            r.points_per_s,
            r.latency_ms.p50,
            r.latency_ms.p99,
            r.max_over_mean_work,
            r.per_worker_work.iter().sum::<u64>() as f64 / 1e6,
            r.rebalanced_rounds,
            r.rounds,
            m.moves,
            m.splits,
            m.merges,
            m.partitions_moved,
            m.bytes_moved as f64 / 1024.0
        );
    }
    println!();
    println!("Migration cost (epochs within one epoch of a plan change taking effect vs the rest):");
    println!("| workload | policy | around changes p99 / max ms | steady p99 / max ms | KiB per moved partition |");
    println!("|---|---|---|---|---|");
    for (c, r) in configs.iter().zip(&medians) {
        if let PolicySpec::Swarm(decision) = c.policy {
            let per = if r.migrations.partitions_moved > 0 {
                r.migrations.bytes_moved as f64 / 1024.0 / r.migrations.partitions_moved as f64
            } else {
                0.0
            };
            println!(
                "| {} | swarm ({decision}) | {:.1} / {:.1} | {:.1} / {:.1} | {per:.1} |",
                c.label,
                r.latency_around_changes_ms.p99,
                r.latency_around_changes_ms.max,
                r.latency_steady_ms.p99,
                r.latency_steady_ms.max
            );
        }
    }
    println!();
    for (label, base) in [("hotspot, 2 workers", 3), ("uniform, 2 workers", 6)] {
        let s = &medians[base];
        for offset in [1, 2] {
            let w = &medians[base + offset];
            println!(
                "{label}: {} points/s = {:.2}x static's, p99 {:.1} ms vs {:.1} ms",
                w.decision,
                w.points_per_s / s.points_per_s,
                w.latency_ms.p99,
                s.latency_ms.p99
            );
        }
    }
}
