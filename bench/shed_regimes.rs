//! The default shedding controller (`auto`, or `bound` designed for the
//! nominal capacity) against the coarse algorithm
//! across regimes: sampling periods W and delay targets D_t, every
//! scenario of the benchmarks (profiles, a cost step, a cost step while
//! another thread takes a core), at 1 and 2 workers. One table.
//!
//! `cargo bench --bench shed_regimes -- [--controller auto|bound] [--drop-late true|false] [--runs N] [--duration-s S] [--cost-us X] [--workers 1,2] [--cells 100/300,100/2000,300/2000,1000/2000] [--scenarios "flash,cost"]`
//!
//! Capacity is `workers × 10⁶ / cost_us` records/s (each worker a core).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use equipoise::shed::design::{nominal_pi, NOMINAL_POLES};
use equipoise_lab::common::median::spread;
use equipoise_lab::shed::job::{run_shedding, ControllerSpec, ShedJob, ShedReport};
use equipoise_lab::shed::scenario::{scenarios, Scenario};

#[derive(Parser, Debug)]
struct Args {
    /// The controller against CA: `auto` (no capacity given) or `bound`
    /// (designed for the nominal capacity).
    #[arg(long, default_value = "auto")]
    controller: String,
    /// Whether the controller under test has its costly stage drop the
    /// records that can no longer make D_t (CA runs as published, without).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    drop_late: bool,
    /// Runs per row: the table shows the medians.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Seconds of arrivals per run.
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// Processing cost per record, µs.
    #[arg(long, default_value_t = 20.0)]
    cost_us: f64,
    /// Worker counts.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2])]
    workers: Vec<usize>,
    /// Cells as W/D_t in ms.
    #[arg(long, value_delimiter = ',', default_values_t = ["100/300".to_string(), "100/2000".to_string(), "300/2000".to_string(), "1000/2000".to_string()])]
    cells: Vec<String>,
    /// Run only the scenarios whose names contain one of these (all if none).
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Runs `job` on `workers` threads while, from `competitor_from` s on, a
/// thread spins on a core of its own.
fn run_with_competitor(job: ShedJob, workers: usize, competitor_from: Option<f64>) -> ShedReport {
    let stop = Arc::new(AtomicBool::new(false));
    let competitor = competitor_from.map(|from| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let start = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                if start.elapsed() < Duration::from_secs_f64(from) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    });
    let report = run_shedding(job, workers).unwrap();
    stop.store(true, Ordering::Relaxed);
    if let Some(thread) = competitor {
        thread.join().unwrap();
    }
    report
}

fn main() {
    let args = Args::parse();
    let cells: Vec<(f64, f64)> = args
        .cells
        .iter()
        .map(|cell| {
            cell.split_once('/')
                .and_then(|(w, t)| Some((w.parse().ok()?, t.parse().ok()?)))
                .unwrap_or_else(|| panic!("--cells {cell}: expected W/D_t in ms, e.g. 300/2000"))
        })
        .collect();
    let tested = args.controller.as_str();
    if !["auto", "bound"].contains(&tested) {
        panic!("--controller {tested}: expected auto or bound");
    }
    println!(
        "shedding regimes: {tested} vs ca, {} µs per record, {} s per run",
        args.cost_us, args.duration_s
    );
    println!("| W / D_t ms | workers | scenario | loss % {tested} / ca / least within D_t | violation s {tested} / ca | admitted over D_t % {tested} / ca | max overshoot ms {tested} / ca | p99 ms {tested} / ca | periods to under D_t after the step | holds | loss target reachable within D_t |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let (mut holding, mut cells_run, mut unreachable, mut holding_reachable) = (0, 0, 0, 0);
    for &(period_ms, target_ms) in &cells {
        for &workers in &args.workers {
            let capacity = workers as f64 * 1e6 / args.cost_us;
            let per_worker = capacity / workers as f64;
            let chosen = scenarios(capacity, args.duration_s, args.cost_us)
                .into_iter()
                .filter(|s| args.scenarios.is_empty() || args.scenarios.iter().any(|p| s.name.contains(p.as_str())));
            for scenario in chosen {
                let Scenario {
                    name,
                    profile,
                    cost_step,
                    step_at,
                    competitor_from,
                } = scenario.clone();
                let job = |controller, drop_late| ShedJob {
                    target_ms,
                    period_ms,
                    duration_s: args.duration_s,
                    cost_us: args.cost_us,
                    cost_step,
                    drop_late,
                    ..ShedJob::new(controller, profile.clone())
                };
                let least = scenario.least_loss(&job(ControllerSpec::None, false), workers);
                let run =
                    |controller, drop_late| run_with_competitor(job(controller, drop_late), workers, competitor_from);
                // The controller under test and CA, side by side in each run.
                let runs: Vec<(ShedReport, ShedReport)> = (0..args.runs.max(1))
                    .map(|_| {
                        let tested_spec = match tested {
                            "auto" => ControllerSpec::Auto,
                            _ => ControllerSpec::Bounded(nominal_pi(period_ms, per_worker, NOMINAL_POLES)),
                        };
                        (run(tested_spec, args.drop_late), run(ControllerSpec::Coarse, false))
                    })
                    .collect();
                let over = |r: &ShedReport| 100.0 * r.delayed_records as f64 / r.processed.max(1) as f64;
                let violation = |r: &ShedReport| r.delay_violation_ms_sum / 1000.0;
                let loss = |r: &ShedReport| 100.0 * r.loss_ratio;
                // The median over runs of a figure of the tested run and of CA's.
                let both = |figure: &dyn Fn(&ShedReport) -> f64| {
                    (
                        spread(runs.iter().map(|(t, _)| figure(t)).collect()).1,
                        spread(runs.iter().map(|(_, c)| figure(c)).collect()).1,
                    )
                };
                let (loss_t, loss_ca) = both(&loss);
                let (over_t, over_ca) = both(&over);
                let (p99_t, p99_ca) = both(&|r| r.delay_ms.p99);
                let settled: Option<Vec<Option<usize>>> =
                    step_at.map(|at| runs.iter().map(|(t, _)| t.periods_until_under(at)).collect());
                let holds = loss_t <= loss_ca + 0.5 && over_t <= 1.0 && p99_t <= 1.2 * target_ms;
                // Whether a shedder admitting no record over D_t can lose as
                // little as the loss target asks: by the fluid model at the
                // nominal capacity, or shown by a run of this row that did
                // (the real capacity can be above the nominal one).
                let within =
                    |r: &ShedReport, ca: &ShedReport| r.delayed_records == 0 && r.loss_ratio <= ca.loss_ratio + 0.005;
                let reachable =
                    100.0 * least <= loss_ca + 0.5 || runs.iter().any(|(t, ca)| within(ca, ca) || within(t, ca));
                cells_run += 1;
                holding += usize::from(holds);
                unreachable += usize::from(!reachable);
                holding_reachable += usize::from(holds && reachable);
                let (violation_t, violation_ca) = both(&violation);
                let (overshoot_t, overshoot_ca) = both(&|r| r.max_overshoot_ms);
                println!(
                    "| {period_ms:.0} / {target_ms:.0} | {workers} | {name} | {loss_t:.2} / {loss_ca:.2} / {:.2} | {violation_t:.1} / {violation_ca:.1} | {over_t:.2} / {over_ca:.2} | {overshoot_t:.0} / {overshoot_ca:.0} | {p99_t:.0} / {p99_ca:.0} | {} | {} | {} |",
                    100.0 * least,
                    match settled {
                        None => "-".to_string(),
                        Some(runs) => runs
                            .iter()
                            .map(|k| k.map_or("never".to_string(), |k| k.to_string()))
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                    if holds { "yes" } else { "no" },
                    if reachable { "yes" } else { "no" }
                );
            }
        }
    }
    println!();
    println!("{holding} of {cells_run} rows hold");
    println!(
        "{unreachable} rows ask for less loss than any shedder admitting no record over D_t can have; {holding_reachable} of the other {} hold",
        cells_run - unreachable
    );
}
