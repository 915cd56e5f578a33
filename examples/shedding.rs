//! PI-controlled load shedding on a dataflow whose input outruns it.
//!
//! ```text
//! cargo run --release --example shedding -- run --controller pi --profile ramp:20000:150000:2:8 \
//!     --cost-us 20 --target-ms 300 --duration-s 10 -w 2 --trace pi.csv --plot pi.svg --report pi.json
//! cargo run --release --example shedding -- identify --cost-us 20 -w 2 --save pi.json
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use equipoise::common::cluster::ClusterArgs;
use equipoise::common::program::write_report;
use equipoise::common::Error;
use equipoise::shed::actuator::Actuation;
use equipoise::shed::controller::PiParams;
use equipoise::shed::design::{closed_loop_poles, default_poles, design, is_stable, nominal_model, nominal_pi};
use equipoise::shed::identification::Identification;
use equipoise::shed::job::{run_shedding_on, ControllerSpec, CostStep, ShedJob, ShedReport};
use equipoise::shed::plot::{write_trace_csv, write_trace_svg};
use equipoise::shed::predictor::Prediction;
use equipoise::shed::profile::Profile;
use equipoise::shed::shedder::ShedMode;

/// Load shedding held at a delay target by a PI controller.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the dataflow under a rate profile with a controller.
    Run(RunArgs),
    /// Identify the dataflow (PRBS input, ARX fit) and design the PI controller.
    Identify(IdentifyArgs),
}

#[derive(Args, Debug)]
struct Common {
    /// Workers and processes (`identify` runs in one process).
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Processing cost per record, µs (calibrated on an idle core).
    #[arg(long, default_value_t = 20.0)]
    cost_us: f64,
    /// Sampling period, ms.
    #[arg(long, default_value_t = 100.0)]
    period_ms: f64,
    /// Seconds of arrivals.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    duration_s: f64,
    /// Seed of the shedder and of record utilities.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// No progress lines on stderr.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    common: Common,
    /// `bound` (PI under a learned margin: the target as a bound), `pi`
    /// (the paper's PI, holding the delay at the target), `ca` (the coarse
    /// algorithm) or `none`.
    #[arg(long, default_value = "bound")]
    controller: String,
    /// Target delay D_t, ms.
    #[arg(long, default_value_t = 300.0, allow_hyphen_values = true)]
    target_ms: f64,
    /// Arrival rate over time: constant:<rate> | step:<r1>:<r2>:<at_s> | ramp:<r1>:<r2>:<from_s>:<to_s> |
    /// sine:<mean>:<amp>:<period_s> | bursts:<base>:<peak>:<every_s>:<len_s> | file:<PATH>.
    #[arg(long, default_value = "ramp:20000:150000:2:8")]
    profile: Profile,
    /// A step in the per-record cost: <cost_us>:<at_s>.
    #[arg(long, allow_hyphen_values = true)]
    cost_step: Option<String>,
    /// PI parameters u,g,r (default: designed for the nominal queue model).
    #[arg(long, conflicts_with = "pi_file")]
    pi: Option<String>,
    /// PI parameters saved by `identify --save`.
    #[arg(long)]
    pi_file: Option<PathBuf>,
    /// The delay the PI controller sees: `smith` (the backlog at the
    /// processing rate, corrected by the measured frontier delay) or `off`
    /// (the frontier delay as measured).
    #[arg(long, value_enum, default_value_t = Prediction::Smith)]
    prediction: Prediction,
    /// How to choose what to drop.
    #[arg(long = "shed", value_enum, default_value_t = ShedMode::Random)]
    mode: ShedMode,
    /// How the controller's output reaches the shedder: `rate` (the admitted
    /// rate is held as arrivals change; PI's default) or `fraction` (a drop
    /// fraction fixed for the period from its arrival rate; CA's and none's).
    #[arg(long, value_enum)]
    actuation: Option<Actuation>,
    /// Per-period trace as CSV.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Delay, target and drop fraction over time, as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// JSON report.
    #[arg(long)]
    report: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct IdentifyArgs {
    #[command(flatten)]
    common: Common,
    /// Arrival rate while identifying, as a multiple of the nominal capacity:
    /// above 1, so that the admitted rate is the controller's to set.
    #[arg(long, default_value_t = 2.0)]
    arrival: f64,
    /// Amplitude of the two-level dither on the admitted rate, as a fraction
    /// of the nominal capacity.
    #[arg(long, default_value_t = 0.2)]
    amplitude: f64,
    /// Periods each dither level holds.
    #[arg(long, default_value_t = 2)]
    hold: usize,
    /// Delay the stabilizing controller holds while identifying, ms.
    #[arg(long, default_value_t = 300.0)]
    target_ms: f64,
    /// The delay to model: `smith` (what `run --prediction smith` controls)
    /// or `off` (the frontier delay as measured).
    #[arg(long, value_enum, default_value_t = Prediction::Smith)]
    prediction: Prediction,
    /// Desired closed-loop poles.
    #[arg(long, default_value = "0.7,0.8")]
    poles: String,
    /// Third pole, for a plant that integrates.
    #[arg(long, default_value_t = 0.6)]
    third_pole: f64,
    /// Save the designed parameters (JSON) for `run --pi-file`.
    #[arg(long)]
    save: Option<PathBuf>,
}

fn main() -> ExitCode {
    equipoise::common::program::exit_quietly_on_closed_stdout();
    let result = match Cli::parse().command {
        Command::Run(args) => run(args),
        Command::Identify(args) => identify(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("shedding: {error}");
            ExitCode::FAILURE
        }
    }
}

fn pair(option: &str, text: &str) -> Result<(f64, f64), Error> {
    let values: Vec<f64> = text
        .split([',', ':'])
        .filter_map(|v| v.trim().parse().ok())
        .filter(|v: &f64| v.is_finite())
        .collect();
    match values[..] {
        [a, b] => Ok((a, b)),
        _ => Err(Error::invalid(option, format!("`{text}`: expected two numbers"))),
    }
}

fn job(common: &Common, controller: ControllerSpec, profile: Profile, target_ms: f64) -> ShedJob {
    ShedJob {
        target_ms,
        period_ms: common.period_ms,
        duration_s: common.duration_s,
        cost_us: common.cost_us,
        seed: common.seed,
        progress: !common.quiet,
        ..ShedJob::new(controller, profile)
    }
}

fn run(args: RunArgs) -> Result<(), Error> {
    let c = &args.common;
    if args.target_ms <= 0.0 || !args.target_ms.is_finite() {
        return Err(Error::invalid(
            "--target-ms",
            format!("{} is not a positive number of ms", args.target_ms),
        ));
    }
    let workers = c.cluster.total_workers();
    let capacity = workers as f64 * 1e6 / c.cost_us.max(1e-3);
    let controller = match args.controller.as_str() {
        "bound" | "pi" => {
            let params = match (&args.pi, &args.pi_file) {
                (Some(text), _) => {
                    let values: Vec<f64> = text
                        .split(',')
                        .map(|v| v.trim().parse::<f64>())
                        .collect::<Result<_, _>>()
                        .map_err(|_| Error::invalid("--pi", format!("`{text}`: expected u,g,r")))?;
                    match values[..] {
                        [u, g, r] => PiParams { u, g, r },
                        _ => return Err(Error::invalid("--pi", format!("`{text}`: expected u,g,r"))),
                    }
                }
                (None, Some(path)) => {
                    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
                        path: path.clone(),
                        source,
                    })?;
                    serde_json::from_str(&text)
                        .map_err(|e| Error::invalid("--pi-file", format!("{}: {e}", path.display())))?
                }
                // Each worker controls its own input into its own queue.
                (None, None) => nominal_pi(c.period_ms, capacity / workers as f64, default_poles(args.prediction)),
            };
            let model = nominal_model(c.period_ms, capacity / workers as f64);
            let finite = [params.u, params.g, params.r].iter().all(|v| v.is_finite());
            if finite && !is_stable(&model, &params) {
                let poles: Vec<String> = closed_loop_poles(&model, &params)
                    .iter()
                    .map(|(re, im)| format!("{re:.3}{im:+.3}i"))
                    .collect();
                eprintln!(
                    "warning: PI u={},g={},r={} is unstable on the nominal queue model (W = {} ms, {:.0} records/s per worker): closed-loop poles {}",
                    params.u,
                    params.g,
                    params.r,
                    c.period_ms,
                    capacity / workers as f64,
                    poles.join(", ")
                );
            }
            if args.controller == "bound" {
                ControllerSpec::Bounded(params)
            } else {
                ControllerSpec::Pi(params)
            }
        }
        "ca" => ControllerSpec::Coarse,
        "none" => ControllerSpec::None,
        other => {
            return Err(Error::invalid(
                "--controller",
                format!("`{other}`: expected bound, pi, ca or none"),
            ))
        }
    };
    let mut job = job(c, controller, args.profile, args.target_ms);
    job.mode = args.mode;
    job.prediction = args.prediction;
    job.actuation = args.actuation;
    if let Some(text) = &args.cost_step {
        let (cost_us, at_s) = pair("--cost-step", text)?;
        job.cost_step = Some(CostStep { cost_us, at_s });
    }
    // The report is in the process that hosts worker 0.
    // What the processes of a cluster must agree on to run one experiment.
    let mut cluster = c.cluster.clone();
    cluster.agree("--controller", &args.controller);
    cluster.agree("--profile", &job.profile);
    cluster.agree("--target-ms", args.target_ms);
    cluster.agree("--period-ms", c.period_ms);
    cluster.agree("--duration-s", c.duration_s);
    cluster.agree("--cost-us", c.cost_us);
    cluster.agree("--cost-step", &args.cost_step);
    cluster.agree("--seed", c.seed);
    let Some(report) = run_shedding_on(job, &cluster)? else {
        return Ok(());
    };
    print_summary(&report);
    if let Some(path) = &args.trace {
        write_trace_csv(path, &report.trace)?;
    }
    if let Some(path) = &args.plot {
        write_trace_svg(
            path,
            &report.trace,
            report.target_delay_ms,
            &format!("{} controller", report.controller),
        )?;
    }
    if let Some(path) = &args.report {
        write_report(path, &report)?;
    }
    Ok(())
}

fn identify(args: IdentifyArgs) -> Result<(), Error> {
    let c = &args.common;
    if c.cluster.processes > 1 {
        return Err(Error::invalid(
            "--processes",
            format!("{}: identify runs in one process", c.cluster.processes),
        ));
    }
    let identification = Identification {
        workers: c.cluster.workers,
        cost_us: c.cost_us,
        period_ms: c.period_ms,
        duration_s: c.duration_s,
        arrival: args.arrival,
        amplitude: args.amplitude,
        hold: args.hold,
        target_ms: args.target_ms,
        prediction: args.prediction,
        seed: c.seed,
    };
    let per_worker = identification.capacity_per_worker();
    println!(
        "exciting {} s: arrivals {}x the nominal capacity ({:.0}/s per worker), admitted rate dithered by ±{:.0}/s per worker every {} periods of {} ms, delay held near {} ms",
        c.duration_s,
        args.arrival,
        per_worker,
        args.amplitude * per_worker,
        args.hold,
        c.period_ms,
        args.target_ms
    );
    let model = identification.run()?;
    println!(
        "queue model for comparison: AD(k) = AD(k−1) + {:.6}·(I(k−1) − capacity)",
        c.period_ms / per_worker
    );
    println!("model: {model}");
    let poles = pair("--poles", &args.poles)?;
    let design = design(&model, poles, args.third_pole)?;
    if let Some(pole) = design.cancelled_pole {
        println!("the model's zero cancels its pole {pole:.4}: poles placed on the first-order model left");
    }
    let p = design.params;
    println!(
        "controller: C(k) − Ĉ = {:.4}·(C(k−1) − Ĉ) + {:.6}·(E(k) − {:.4}·E(k−1)), Ĉ the rate just processed",
        p.u, p.g, p.r
    );
    let shown: Vec<String> = design
        .poles
        .iter()
        .map(|(re, im)| {
            if *im == 0.0 {
                format!("{re:.4}")
            } else {
                format!("{re:.4}{im:+.4}i")
            }
        })
        .collect();
    println!("closed-loop poles: {}", shown.join(", "));
    if let Some(path) = &args.save {
        write_report(path, &p)?;
        println!(
            "saved to {}; use with `run --pi-file {} --prediction {}`",
            path.display(),
            path.display(),
            args.prediction
                .to_possible_value()
                .expect("every value is named")
                .get_name()
        );
    }
    Ok(())
}

fn print_summary(r: &ShedReport) {
    println!(
        "{} controller, target {} ms, {} s: {} arrived, {} dropped",
        r.controller, r.target_delay_ms, r.duration_s, r.arrived, r.dropped
    );
    println!(
        "  loss {:.2} % (ideal {:.2} %); delay mean {:.1} ms, p50 {:.1}, p99 {:.1}, max {:.1}",
        100.0 * r.loss_ratio,
        100.0 * r.ideal_loss_ratio,
        r.mean_delay_ms,
        r.delay_ms.p50,
        r.delay_ms.p99,
        r.delay_ms.max
    );
    println!(
        "  {} records over target, violation sum {:.0} ms, max overshoot {:.1} ms",
        r.delayed_records, r.delay_violation_ms_sum, r.max_overshoot_ms
    );
    if r.controller == "pi" {
        println!(
            "  PI u = {:.4}, g = {:.4}, r = {:.4}",
            r.params.u, r.params.g, r.params.r
        );
    }
}
