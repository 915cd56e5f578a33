//! SWARM's index and statistics: point routing, Algorithm 1 vs a cell scan,
//! the round-end update, and the split-line search.
//!
//! `cargo bench --bench swarm_index -- [--rounds R]`
//!
//! Each figure is the median over `--rounds` repetitions, measured side by
//! side in one run.

use std::hint::black_box;
use std::time::Instant;

use clap::Parser;
use equipoise::swarm::cost::{CostModel, RangeQueryCost};
use equipoise::swarm::plan::{
    best_line, best_line_exhaustive, normalized, random_change, GlobalIndex, IdMint, PartitionStats,
};
use equipoise::swarm::plan::{Axis, Cell, CellRect};
use equipoise::swarm::{Grid, OutOfBounds, Rect};
use equipoise_lab::common::median::median_by;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[derive(Parser, Debug)]
struct Args {
    /// Repetitions of each measurement.
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Median over `rounds` of the seconds `work` takes, divided by `per`.
fn time_per(rounds: usize, per: f64, mut work: impl FnMut()) -> f64 {
    median_by(
        (0..rounds)
            .map(|_| {
                let start = Instant::now();
                work();
                start.elapsed().as_secs_f64() / per
            })
            .collect(),
        |x| *x,
    )
}

/// A 256 × 256 grid for 16 workers, fragmented by 300 random plan changes.
fn fragmented_index(rng: &mut SmallRng) -> GlobalIndex {
    let grid = Grid::new(Rect::new(0.0, 0.0, 1000.0, 1000.0).unwrap(), 256, 256).unwrap();
    let workers = 16;
    let (mut index, base) = GlobalIndex::initial(grid, workers).unwrap();
    let mut mint = IdMint::new(base, 0, 1);
    for _ in 0..300 {
        if let Some(change) = random_change(rng, &index, workers, &mut mint) {
            index.apply(&change).unwrap();
        }
    }
    index
}

fn main() {
    let args = Args::parse();
    let mut rng = SmallRng::seed_from_u64(1);
    let index = fragmented_index(&mut rng);
    println!("SWARM index and statistics, {} rounds, medians", args.rounds);
    println!("| measurement | figure |");
    println!("|---|---|");

    // Point routing.
    let points: Vec<(f64, f64)> = (0..2_000_000)
        .map(|_| (rng.random_range(0.0..1000.0), rng.random_range(0.0..1000.0)))
        .collect();
    let per_point = time_per(args.rounds, points.len() as f64, || {
        let mut owners = 0usize;
        for &(x, y) in &points {
            owners += index.route_point(x, y, OutOfBounds::Reject).unwrap().1;
        }
        black_box(owners);
    });
    println!(
        "| point routing, 256 × 256 grid, {} partitions | {:.1} ns/point |",
        index.partitions().len(),
        per_point * 1e9
    );

    // Algorithm 1 vs the cell scan.
    for side in [4u32, 32, 128, 256] {
        let queries: Vec<CellRect> = (0..2000)
            .map(|_| {
                let (row0, col0) = (rng.random_range(0..=256 - side), rng.random_range(0..=256 - side));
                CellRect {
                    row0,
                    col0,
                    row1: row0 + side - 1,
                    col1: col0 + side - 1,
                }
            })
            .collect();
        let found: f64 = queries
            .iter()
            .map(|q| index.partitions_overlapping(q).len() as f64)
            .sum::<f64>()
            / 2000.0;
        let fast = time_per(args.rounds, 2000.0, || {
            for q in &queries {
                black_box(index.partitions_overlapping(q));
            }
        });
        let scan = time_per(args.rounds, 2000.0, || {
            for q in &queries {
                black_box(index.partitions_overlapping_by_scan(q));
            }
        });
        println!(
            "| range query {side} × {side} cells ({found:.1} partitions): Algorithm 1 vs cell scan | {:.2} µs vs {:.2} µs ({:.1}× faster) |",
            fast * 1e6,
            scan * 1e6,
            scan / fast
        );
    }

    // Round-end update of a 64 × 64-cell partition with a round of objects.
    let mut stats = PartitionStats::new(64, 64);
    let fill = |stats: &mut PartitionStats, rng: &mut SmallRng| {
        for _ in 0..10_000 {
            stats.record_point(Cell {
                row: rng.random_range(0..64),
                col: rng.random_range(0..64),
            });
        }
        for _ in 0..100 {
            let (row0, col0) = (rng.random_range(0..56), rng.random_range(0..56));
            stats.record_query(&CellRect {
                row0,
                col0,
                row1: row0 + 7,
                col1: col0 + 7,
            });
        }
    };
    let mut samples = Vec::new();
    for _ in 0..args.rounds.max(1) * 20 {
        fill(&mut stats, &mut rng);
        let start = Instant::now();
        stats.end_round();
        samples.push(start.elapsed().as_secs_f64());
    }
    println!(
        "| round-end update (Algorithm 2), 64 × 64-cell partition | {:.2} µs |",
        median_by(samples, |x| *x) * 1e6
    );

    // Split-line search on that partition: both axes, both sides.
    let model = RangeQueryCost::default();
    let total = model.work(&stats.totals());
    let (high, low, r_s) = (total / 1000.0 * 2.0, total / 1000.0 * 0.5, 1000.0);
    let search = |exhaustive: bool| {
        let mut best = f64::MAX;
        for axis in [Axis::Rows, Axis::Columns] {
            for move_second in [false, true] {
                let signed = |after: u32| {
                    let (first, second) = stats.split_totals(axis, after);
                    let (moving, staying) = if move_second { (second, first) } else { (first, second) };
                    (high - normalized(total, r_s) + normalized(model.work(&staying), r_s))
                        - (low + normalized(model.work(&moving), r_s))
                };
                let (_, value) = if exhaustive {
                    best_line_exhaustive(63, signed)
                } else {
                    best_line(63, signed)
                };
                best = best.min(value.abs());
            }
        }
        best
    };
    assert_eq!(search(false), search(true), "binary and exhaustive searches agree");
    let binary = time_per(args.rounds, 1000.0, || {
        for _ in 0..1000 {
            black_box(search(false));
        }
    });
    let exhaustive = time_per(args.rounds, 1000.0, || {
        for _ in 0..1000 {
            black_box(search(true));
        }
    });
    println!(
        "| split-line search, 64 × 64-cell partition, 2 axes × 2 sides: binary vs exhaustive | {:.2} µs vs {:.2} µs |",
        binary * 1e6,
        exhaustive * 1e6
    );
}
