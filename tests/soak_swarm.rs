//! SWARM's memory soak: range queries over a moving hotspot at 2 workers,
//! the threshold policy moving, splitting and merging partitions as the
//! hotspot moves, a query replaced every epoch (1 000 registered at any
//! time), SWARM's log listened to; the process's memory must stop growing
//! after the first minute (see `support/soak.rs`). Ten minutes, so ignored
//! by default:
//!
//! ```sh
//! cargo test --release --test soak_swarm -- --ignored --nocapture
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use equipoise::common::hash::splitmix64;
use equipoise::swarm::events::SwarmEvent;
use equipoise::swarm::{Grid, Point, Policy, Query, RangeQueries, Record, Rect, Swarm, SwarmConfig, LOG_NAME};
use support::soak::Soak;
use timely::dataflow::operators::vec::Input;
use timely::dataflow::operators::Inspect;
use timely::dataflow::InputHandle;

mod support;

/// Queries registered at any time.
const QUERIES: u64 = 1_000;
/// Points per epoch and worker.
const BATCH: u64 = 2_000;
/// The side of the square space.
const SIDE: f64 = 1_000.0;

/// A number in [0, 1) from `seed`.
fn unit(seed: u64) -> f64 {
    (splitmix64(seed) >> 11) as f64 / (1u64 << 53) as f64
}

/// Query `id`: a square of side 10 to 60 anywhere in the space.
fn query(id: u64) -> Query {
    let side = 10.0 + 50.0 * unit(id << 2 | 1);
    let (x, y) = (unit(id << 2 | 2) * (SIDE - side), unit(id << 2 | 3) * (SIDE - side));
    Query::new(id, Rect::new(x, y, x + side, y + side).unwrap())
}

#[test]
#[ignore = "a soak of ten minutes: cargo test --release --test soak_swarm -- --ignored --nocapture"]
fn swarm_holds_its_memory() {
    let soak = Arc::new(Soak::new("swarm"));
    let matched = Arc::new(AtomicU64::new(0));
    let (shared, matched_by_workers) = (Arc::clone(&soak), Arc::clone(&matched));
    timely::execute(timely::Config::process(2), move |worker| {
        let soak = Arc::clone(&shared);
        soak.count_events::<SwarmEvent>(worker, LOG_NAME);
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let grid = Grid::new(Rect::new(0.0, 0.0, SIDE, SIDE).unwrap(), 64, 64).unwrap();
        let config = SwarmConfig::new(grid);
        let mut input = InputHandle::new();
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let (matches, handles) = scope
                .input_from(&mut input)
                .swarm::<RangeQueries>(&config, Policy::threshold(1.2))
                .unwrap();
            let matched = Arc::clone(&matched_by_workers);
            matches.inspect(move |_| {
                matched.fetch_add(1, Ordering::Relaxed);
            });
            handles.probe().clone()
        });
        if index == 0 {
            for id in 0..QUERIES {
                input.send(config.query(query(id)).unwrap());
            }
        }
        let mut epoch = 0u64;
        while soak.running() {
            epoch += 1;
            input.advance_to(epoch);
            if index == 0 {
                // The oldest query leaves, a new one comes.
                input.send(Record::removal(epoch - 1));
                input.send(config.query(query(epoch - 1 + QUERIES)).unwrap());
            }
            // A hotspot of radius 50 circling the space once every 2 000
            // epochs takes 70 % of the points.
            let angle = epoch as f64 / 2_000.0 * std::f64::consts::TAU;
            let (cx, cy) = (SIDE / 2.0 + 350.0 * angle.cos(), SIDE / 2.0 + 350.0 * angle.sin());
            for i in 0..BATCH {
                let id = (epoch * BATCH + i) * peers + index;
                let (u, v, w) = (unit(id << 2), unit(id << 2 | 1), unit(id << 2 | 2));
                let (x, y) = if w < 0.7 {
                    (cx + 100.0 * (u - 0.5), cy + 100.0 * (v - 0.5))
                } else {
                    (u * SIDE, v * SIDE)
                };
                input.send(config.point(Point::new(id, x, y)).unwrap());
            }
            while probe.less_than(&(epoch - 1)) {
                worker.step();
            }
            soak.records.fetch_add(BATCH, Ordering::Relaxed);
        }
    })
    .unwrap();
    println!("soak swarm: {} matches", matched.load(Ordering::Relaxed));
    assert!(matched.load(Ordering::Relaxed) > 0, "the queries saw points");
    soak.check();
}
