//! The shedding loop around the shapes a program's dataflow has: every
//! worker reading (`even`), only worker 0 reading (`one`), and worker 0
//! reading 80 % (`skewed:0.8`), the last two exchanging the admitted records
//! before the costly stage; at 1, 2 and 4 workers, under a constant overload
//! of 2.5 times what the dataflow processes. Two controllers side by side in
//! each run: `auto` (no capacity given) and `bound` designed for four times
//! the capacity (an expert's guess 4× off), both with late records dropped
//! before their work.
//!
//! `cargo bench --bench shed_shapes -- [--workers 1,2,4] [--readers even,one,skewed:0.8] [--runs 3] [--duration-s 10] [--overload 2.5] [--target-ms 300] [--period-ms 100] [--cost-us 20]`
//!
//! The capacity of each shape is measured first: the records/s the
//! dataflow completes, unshed, while the same arrivals keep coming (4
//! workers share this machine's 2 cores, and a lone reader also reads every
//! arrival). The ideal loss is what that capacity forces: 1 − C·(d + D_t) /
//! (R·d) for arrivals R over d seconds. A row holds when the median p99
//! delay of admitted records is at most D_t, the median loss at most the
//! ideal + 2 points, and the readers' drop fractions within 5 points of
//! each other.

use clap::Parser;
use equipoise::shed::design::{nominal_pi, NOMINAL_POLES};
use equipoise_lab::common::median::spread;
use equipoise_lab::shed::job::{run_shedding, ControllerSpec, ShedJob, ShedReport};
use equipoise_lab::shed::profile::Profile;
use equipoise_lab::shed::readers::Readers;

#[derive(Parser, Debug)]
struct Args {
    /// Worker counts.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4])]
    workers: Vec<usize>,
    /// Shapes: which workers read.
    #[arg(long, value_delimiter = ',', default_values_t = [Readers::Even, Readers::One, Readers::Skewed(0.8)])]
    readers: Vec<Readers>,
    /// Runs per row: the table shows medians.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Seconds of arrivals per run.
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// Arrivals as a multiple of the measured capacity.
    #[arg(long, default_value_t = 2.5)]
    overload: f64,
    /// D_t, ms.
    #[arg(long, default_value_t = 300.0)]
    target_ms: f64,
    /// W, ms.
    #[arg(long, default_value_t = 100.0)]
    period_ms: f64,
    /// Processing cost per record, µs.
    #[arg(long, default_value_t = 20.0)]
    cost_us: f64,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Seconds of arrivals of the capacity measurement.
const CALIBRATION_S: f64 = 3.0;

fn main() {
    let args = Args::parse();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let job = |controller, readers, rate: f64, duration_s| ShedJob {
        target_ms: args.target_ms,
        period_ms: args.period_ms,
        duration_s,
        cost_us: args.cost_us,
        readers,
        ..ShedJob::new(controller, Profile::Constant(rate))
    };
    println!(
        "shedding shapes: {} × capacity, D_t {} ms, W {} ms, {} µs per record, {} s per run, medians of {}",
        args.overload, args.target_ms, args.period_ms, args.cost_us, args.duration_s, args.runs
    );
    println!("| readers | workers | capacity records/s | controller | loss % / ideal % | p99 ms | admitted over D_t % | late % | readers' drop fractions % | holds |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let (mut rows, mut holding) = (0, 0);
    for &workers in &args.workers {
        for &readers in &args.readers {
            // The capacity of this shape: unshed, every admitted record
            // worked on, the records/s completed while arrivals still come
            // (after the first second, when a backlog has built up). Once
            // they stop, a lone reader works faster, relieved of reading.
            let nominal = workers.min(cores) as f64 * 1e6 / args.cost_us;
            let calibration = ShedJob {
                drop_late: false,
                ..job(ControllerSpec::None, readers, args.overload * nominal, CALIBRATION_S)
            };
            let unshed = run_shedding(calibration, workers).expect("the calibration run");
            let fed: Vec<f64> = unshed
                .trace
                .iter()
                .filter(|row| row.time_s >= 1.0 && row.time_s <= CALIBRATION_S)
                .map(|row| row.processed_rate)
                .collect();
            let capacity = fed.iter().sum::<f64>() / fed.len().max(1) as f64;
            let rate = args.overload * capacity;
            let ideal = 1.0 - capacity * (args.duration_s + args.target_ms / 1000.0) / (rate * args.duration_s);
            // 4× the measured capacity per worker: the expert's wrong guess.
            let guess = 4.0 * capacity / workers as f64;
            let controllers = [
                ("auto", ControllerSpec::Auto),
                (
                    "bound, 4× capacity",
                    ControllerSpec::Bounded(nominal_pi(args.period_ms, guess, NOMINAL_POLES)),
                ),
            ];
            let runs: Vec<Vec<ShedReport>> = (0..args.runs.max(1))
                .map(|_| {
                    controllers
                        .iter()
                        .map(|(_, spec)| run_shedding(job(*spec, readers, rate, args.duration_s), workers).unwrap())
                        .collect()
                })
                .collect();
            for (k, (name, _)) in controllers.iter().enumerate() {
                let median =
                    |figure: &dyn Fn(&ShedReport) -> f64| spread(runs.iter().map(|r| figure(&r[k])).collect()).1;
                let loss = median(&|r| 100.0 * r.loss_ratio);
                let p99 = median(&|r| r.delay_ms.p99);
                let over = median(&|r| 100.0 * r.delayed_records as f64 / r.processed.max(1) as f64);
                let late = median(&|r| 100.0 * r.late as f64 / r.arrived.max(1) as f64);
                // The readers' drop fractions: the median run's, by worker.
                let fractions: Vec<f64> = (0..workers)
                    .filter(|&w| readers.share(w, workers) > 0.0)
                    .map(|w| median(&|r| 100.0 * r.drop_fraction_by_worker[w]))
                    .collect();
                let (low, _, high) = spread(fractions.clone());
                let holds = p99 <= args.target_ms && loss <= 100.0 * ideal + 2.0 && high - low <= 5.0;
                rows += 1;
                holding += usize::from(holds);
                println!(
                    "| {readers} | {workers} | {capacity:.0} | {name} | {loss:.1} / {:.1} | {p99:.0} | {over:.2} | {late:.2} | {} | {} |",
                    100.0 * ideal,
                    fractions.iter().map(|f| format!("{f:.1}")).collect::<Vec<_>>().join(" / "),
                    if holds { "yes" } else { "no" }
                );
            }
        }
    }
    println!();
    println!("{holding} of {rows} rows hold");
}
