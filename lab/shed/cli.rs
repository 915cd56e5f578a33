//! The shedding example's command line: its flags, checked, as the job and
//! the cluster they describe; `identify` whole; and the summary `run` prints.

// The flags' docs are their `--help` text, where `<rate>` is a placeholder,
// not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::fmt;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use crate::common::cluster::ClusterArgs;
use crate::common::log_file::LogFile;
use crate::common::program::write_report;
use crate::common::Error;

use super::identification::Identification;
use super::job::{capacity_per_worker, ControllerSpec, CostStep, ShedJob, ShedMode, ShedReport};
use super::plot::{write_trace_csv, write_trace_svg};
use super::profile::Profile;
use super::readers::Readers;
use equipoise::shed::design::{closed_loop_poles, default_poles, design, is_stable, nominal_model, nominal_pi};
use equipoise::shed::Actuation;
use equipoise::shed::PiParams;
use equipoise::shed::Prediction;

/// Load shedding held at a delay target by a PI controller.
#[derive(clap::Parser, Debug)]
#[command(version)]
pub struct ShedArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ShedCommand,
}

/// The example's subcommands.
#[derive(Subcommand, Debug)]
pub enum ShedCommand {
    /// Run the dataflow under a rate profile with a controller.
    Run(Box<RunArgs>),
    /// Identify the dataflow (PRBS input, ARX fit) and design the PI controller.
    Identify(Box<IdentifyArgs>),
}

/// Flags both subcommands take.
#[derive(Args, Debug)]
pub struct CommonArgs {
    /// Workers and processes (`identify` runs in one process).
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Processing cost per record, µs (calibrated on an idle core).
    #[arg(long, default_value_t = 20.0)]
    pub cost_us: f64,
    /// Sampling period, ms.
    #[arg(long, default_value_t = 100.0)]
    pub period_ms: f64,
    /// Seconds of arrivals.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub duration_s: f64,
    /// Seed of the shedder and of record utilities.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// `shedding run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Flags both subcommands take.
    #[command(flatten)]
    pub common: CommonArgs,
    /// The skew report's flags.
    #[command(flatten)]
    pub doctor: crate::common::doctor_args::DoctorArgs,
    /// `auto` (the capacity measured and `bound` designed for it), `bound`
    /// (the paper's PI, given or designed for the nominal capacity, under a
    /// learned margin that keeps the delay under the target), `pi` (the
    /// paper's PI, holding the delay at the target), `ca` (the coarse algorithm) or `none`. Default: `auto`, or
    /// `bound` when `--pi` or `--pi-file` gives a PI.
    #[arg(long)]
    pub controller: Option<String>,
    /// Target delay D_t, ms.
    #[arg(long, default_value_t = 300.0, allow_hyphen_values = true)]
    pub target_ms: f64,
    /// Arrival rate over time: constant:<rate> | step:<r1>:<r2>:<at_s> | ramp:<r1>:<r2>:<from_s>:<to_s> |
    /// sine:<mean>:<amp>:<period_s> | bursts:<base>:<peak>:<every_s>:<len_s> | file:<PATH>.
    #[arg(long, default_value = "ramp:20000:150000:2:8")]
    pub profile: Profile,
    /// Which workers read: `even` (every worker alike), `one` (worker 0) or
    /// `skewed:<share>` (worker 0 reads that share, the others the rest);
    /// under the last two the admitted records are exchanged before the
    /// costly stage.
    #[arg(long, default_value = "even")]
    pub readers: Readers,
    /// Whether the costly stage drops, before spending work on them, the
    /// admitted records that can no longer make the target (counted as
    /// `late` in the report): `true` or `false`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub drop_late: bool,
    /// A step in the per-record cost: <cost_us>:<at_s>.
    #[arg(long, allow_hyphen_values = true)]
    pub cost_step: Option<String>,
    /// PI parameters u,g,r (default: designed for the nominal queue model).
    #[arg(long, conflicts_with = "pi_file")]
    pub pi: Option<String>,
    /// PI parameters saved by `identify --save`.
    #[arg(long)]
    pub pi_file: Option<PathBuf>,
    /// The delay the PI controller sees: `smith` (the backlog at the
    /// processing rate, corrected by the measured frontier delay) or `off`
    /// (the frontier delay as measured).
    #[arg(long, value_enum, default_value_t = Prediction::Smith)]
    pub prediction: Prediction,
    /// How to choose what to drop.
    #[arg(long = "shed", value_enum, default_value_t = ShedMode::Random)]
    pub mode: ShedMode,
    /// How the controller's output reaches the shedder: `rate` (the admitted
    /// rate is held as arrivals change; PI's default) or `fraction` (a drop
    /// fraction fixed for the period from its arrival rate; CA's and none's).
    #[arg(long, value_enum)]
    pub actuation: Option<Actuation>,
    /// Per-period trace as CSV.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Delay, target and drop fraction over time, as SVG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// JSON report.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// The loops' decisions (timely log events), one JSON object a line
    /// (with several processes, process p writes FILE.p).
    #[arg(long)]
    pub log: Option<PathBuf>,
}

/// `shedding identify`.
#[derive(Args, Debug)]
pub struct IdentifyArgs {
    /// Flags both subcommands take.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Arrival rate while identifying, as a multiple of the nominal capacity:
    /// above 1, so that the admitted rate is the controller's to set.
    #[arg(long, default_value_t = 2.0)]
    pub arrival: f64,
    /// Amplitude of the two-level dither on the admitted rate, as a fraction
    /// of the nominal capacity.
    #[arg(long, default_value_t = 0.2)]
    pub amplitude: f64,
    /// Periods each dither level holds.
    #[arg(long, default_value_t = 2)]
    pub hold: usize,
    /// Delay the stabilizing controller holds while identifying, ms.
    #[arg(long, default_value_t = 300.0)]
    pub target_ms: f64,
    /// The delay to model: `smith` (what `run --prediction smith` controls)
    /// or `off` (the frontier delay as measured).
    #[arg(long, value_enum, default_value_t = Prediction::Smith)]
    pub prediction: Prediction,
    /// Desired closed-loop poles.
    #[arg(long, default_value = "0.7,0.8")]
    pub poles: String,
    /// Third pole, for a plant that integrates.
    #[arg(long, default_value_t = 0.6)]
    pub third_pole: f64,
    /// Save the designed parameters (JSON) for `run --pi-file`.
    #[arg(long)]
    pub save: Option<PathBuf>,
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

impl RunArgs {
    /// The job these flags describe, checked, and the cluster with every
    /// setting its processes must share. Warns on stderr of PI parameters
    /// unstable on the nominal queue model.
    pub fn job(&self) -> Result<(ShedJob, ClusterArgs), Error> {
        let c = &self.common;
        let mut job = ShedJob {
            target_ms: self.target_ms,
            period_ms: c.period_ms,
            duration_s: c.duration_s,
            cost_us: c.cost_us,
            seed: c.seed,
            progress: !c.quiet,
            mode: self.mode,
            prediction: self.prediction,
            actuation: self.actuation,
            readers: self.readers,
            drop_late: self.drop_late,
            ..ShedJob::new(self.controller()?, self.profile.clone())
        };
        if let Some(text) = &self.cost_step {
            job.cost_step = Some(text.parse::<CostStep>()?);
        }
        job.log = LogFile::for_flag(self.log.as_deref(), &c.cluster)?;
        job.check()?;
        // What the processes of a cluster must agree on to run one experiment.
        let mut cluster = c.cluster.clone();
        cluster.agree("--controller", self.controller_name());
        cluster.agree("--profile", &job.profile);
        cluster.agree("--target-ms", self.target_ms);
        cluster.agree("--period-ms", c.period_ms);
        cluster.agree("--duration-s", c.duration_s);
        cluster.agree("--cost-us", c.cost_us);
        cluster.agree("--cost-step", &self.cost_step);
        cluster.agree("--seed", c.seed);
        cluster.agree("--readers", self.readers);
        cluster.agree("--drop-late", self.drop_late);
        Ok((job, cluster))
    }

    /// `--controller`, or its default.
    fn controller_name(&self) -> &str {
        let given = self.pi.is_some() || self.pi_file.is_some();
        self.controller
            .as_deref()
            .unwrap_or(if given { "bound" } else { "auto" })
    }

    fn controller(&self) -> Result<ControllerSpec, Error> {
        let c = &self.common;
        let params = match self.controller_name() {
            "bound" | "pi" => self.params()?,
            "auto" if self.pi.is_some() || self.pi_file.is_some() => {
                return Err(Error::invalid(
                    "--controller",
                    "auto designs its own PI: give --pi or --pi-file with bound or pi".to_string(),
                ))
            }
            "auto" => return Ok(ControllerSpec::Auto),
            "ca" => return Ok(ControllerSpec::Coarse),
            "none" => return Ok(ControllerSpec::None),
            other => {
                return Err(Error::invalid(
                    "--controller",
                    format!("`{other}`: expected auto, bound, pi, ca or none"),
                ))
            }
        };
        // Each worker controls its own input into its own queue.
        let per_worker = capacity_per_worker(c.cost_us);
        let model = nominal_model(c.period_ms, per_worker);
        let finite = [params.u, params.g, params.r].iter().all(|v| v.is_finite());
        if finite && !is_stable(&model, &params) {
            let poles: Vec<String> = closed_loop_poles(&model, &params)
                .iter()
                .map(|(re, im)| format!("{re:.3}{im:+.3}i"))
                .collect();
            eprintln!(
                "warning: PI u={},g={},r={} is unstable on the nominal queue model (W = {} ms, {per_worker:.0} records/s per worker): closed-loop poles {}",
                params.u,
                params.g,
                params.r,
                c.period_ms,
                poles.join(", ")
            );
        }
        Ok(if self.controller_name() == "bound" {
            ControllerSpec::Bounded(params)
        } else {
            ControllerSpec::Pi(params)
        })
    }

    /// The PI parameters: `--pi`, `--pi-file` or designed for the nominal
    /// queue model.
    fn params(&self) -> Result<PiParams, Error> {
        let c = &self.common;
        match (&self.pi, &self.pi_file) {
            (Some(text), _) => {
                let malformed = || Error::invalid("--pi", format!("`{text}`: expected u,g,r"));
                let values: Vec<f64> = text
                    .split(',')
                    .map(|v| v.trim().parse::<f64>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| malformed())?;
                match values[..] {
                    [u, g, r] => Ok(PiParams { u, g, r }),
                    _ => Err(malformed()),
                }
            }
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?;
                serde_json::from_str(&text).map_err(|e| Error::invalid("--pi-file", format!("{}: {e}", path.display())))
            }
            (None, None) => Ok(nominal_pi(
                c.period_ms,
                capacity_per_worker(c.cost_us),
                default_poles(self.prediction),
            )),
        }
    }

    /// Writes what `--trace`, `--plot` and `--report` ask for.
    pub fn write(&self, report: &ShedReport) -> Result<(), Error> {
        if let Some(path) = &self.trace {
            write_trace_csv(path, &report.trace)?;
        }
        if let Some(path) = &self.plot {
            let title = format!("{} controller", report.controller);
            write_trace_svg(path, &report.trace, report.target_delay_ms, &title)?;
        }
        if let Some(path) = &self.report {
            write_report(path, report)?;
        }
        Ok(())
    }
}

impl IdentifyArgs {
    /// Identifies the dataflow, designs the controller and prints both (and
    /// saves the parameters with `--save`).
    pub fn run(&self) -> Result<(), Error> {
        let c = &self.common;
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
            arrival: self.arrival,
            amplitude: self.amplitude,
            hold: self.hold,
            target_ms: self.target_ms,
            prediction: self.prediction,
            seed: c.seed,
        };
        let per_worker = identification.capacity_per_worker();
        println!(
            "exciting {} s: arrivals {}x the nominal capacity ({:.0}/s per worker), admitted rate dithered by ±{:.0}/s per worker every {} periods of {} ms, delay held near {} ms",
            c.duration_s,
            self.arrival,
            per_worker,
            self.amplitude * per_worker,
            self.hold,
            c.period_ms,
            self.target_ms
        );
        let model = identification.run()?;
        println!(
            "queue model for comparison: AD(k) = AD(k−1) + {:.6}·(I(k−1) − capacity)",
            c.period_ms / per_worker
        );
        println!("model: {model}");
        let design = design(&model, pair("--poles", &self.poles)?, self.third_pole)?;
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
            .map(|(re, im)| match *im {
                0.0 => format!("{re:.4}"),
                _ => format!("{re:.4}{im:+.4}i"),
            })
            .collect();
        println!("closed-loop poles: {}", shown.join(", "));
        if let Some(path) = &self.save {
            write_report(path, &p)?;
            let prediction = self.prediction.to_possible_value().expect("every value is named");
            println!(
                "saved to {}; use with `run --pi-file {} --prediction {}`",
                path.display(),
                path.display(),
                prediction.get_name()
            );
        }
        Ok(())
    }
}

/// The summary `shedding run` prints.
impl fmt::Display for ShedReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self;
        writeln!(
            f,
            "{} controller, target {} ms, {} s: {} arrived, {} dropped, {} late",
            r.controller, r.target_delay_ms, r.duration_s, r.arrived, r.dropped, r.late
        )?;
        writeln!(
            f,
            "  loss {:.2} % (ideal {:.2} %); delay mean {:.1} ms, p50 {:.1}, p99 {:.1}, max {:.1}",
            100.0 * r.loss_ratio,
            100.0 * r.ideal_loss_ratio,
            r.mean_delay_ms,
            r.delay_ms.p50,
            r.delay_ms.p99,
            r.delay_ms.max
        )?;
        writeln!(
            f,
            "  {} records over target, violation sum {:.0} ms, max overshoot {:.1} ms",
            r.delayed_records, r.delay_violation_ms_sum, r.max_overshoot_ms
        )?;
        if r.controller == "pi" {
            writeln!(
                f,
                "  PI u = {:.4}, g = {:.4}, r = {:.4}",
                r.params.u, r.params.g, r.params.r
            )?;
        }
        Ok(())
    }
}

/// Reports side by side, one row per run, as a Markdown table.
pub fn comparison_table(reports: &[ShedReport]) -> String {
    let mut table = String::from(
        "| controller | loss % | ideal loss % | records over target | violation sum (s) | max overshoot ms | p99 delay ms |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in reports {
        table.push_str(&format!(
            "| {} | {:.1} | {:.1} | {} | {:.1} | {:.0} | {:.0} |\n",
            r.controller,
            100.0 * r.loss_ratio,
            100.0 * r.ideal_loss_ratio,
            r.delayed_records,
            r.delay_violation_ms_sum / 1000.0,
            r.max_overshoot_ms,
            r.delay_ms.p99
        ));
    }
    table
}
