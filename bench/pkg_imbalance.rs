//! The PKG papers' simulations: key streams replayed through every scheme
//! at several worker counts, side by side, with the pacts' routing code.
//!
//! `cargo run --release --bench pkg_imbalance -- [--keys <form> ... | --input FILE | --weights FILE --messages M]
//!  --workers 5,10,50,100 --sources S[,S...] [--split even|uneven] [--schemes a,b,..] [--salt S] --report PATH [--plot SVG]`
//!
//! Key forms: `zipf:<exponent>:<distinct>`, `mandelbrot:<exponent>:<offset>:<distinct>`,
//! `lognormal:<mu>:<sigma>:<distinct>`,
//! `ln1` and `ln2` (log-normal weights like the paper's datasets: μ = 1.789,
//! 16,000 keys, σ set so p1 = 14.7 %; μ = 2.245, 1,100 keys, p1 = 7 %), `drift:<exponent>:<distinct>:<phases>`
//! (Zipf whose hot keys change `phases` times). Without a dataset: ln1, ln2,
//! zipf:1.0:10000, zipf:1.4:10000, zipf:2.0:10000 and drift:1.4:10000:5.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use equipoise_lab::common::keys::{KeySampler, KeySpec};
use equipoise_lab::common::lines::OnError;
use equipoise_lab::common::program::write_report;
use equipoise_lab::common::Error;
use equipoise_lab::pkg::sim::plot::{write_panels, Panel};
use equipoise_lab::pkg::sim::{replay, Dataset, SimScheme, Split};
use serde::Serialize;

#[derive(Parser, Debug)]
struct Args {
    /// Key streams to generate (repeatable).
    #[arg(long)]
    keys: Vec<String>,
    /// A file of keys, one per line, replayed in order.
    #[arg(long, conflicts_with = "weights")]
    input: Option<PathBuf>,
    /// A file of `key<TAB>probability` lines, sampled into --messages keys.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// Messages per generated stream.
    #[arg(long, default_value_t = 10_000_000)]
    messages: usize,
    /// Worker counts.
    #[arg(long, value_delimiter = ',', default_value = "5,10,50,100")]
    workers: Vec<usize>,
    /// Source counts.
    #[arg(long, value_delimiter = ',', default_value = "5")]
    sources: Vec<usize>,
    /// How the stream is divided among sources.
    #[arg(long, value_enum, default_value_t = Split::Even)]
    split: Split,
    /// Schemes (default: all).
    #[arg(long, value_delimiter = ',')]
    schemes: Vec<String>,
    /// Bad lines in --input/--weights: fail (default) or skip.
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    on_error: OnError,
    /// Seed of the generated streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Salt hashed into every key's fingerprint (0: none): each salt is
    /// another draw of the hash functions, on the same stream.
    #[arg(long, default_value_t = 0)]
    salt: u64,
    /// JSON report: {"rows": [...]}.
    #[arg(long)]
    report: Option<PathBuf>,
    /// SVG: imbalance vs workers per dataset, and over time for drifting streams.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// cargo bench passes --bench; accepted and ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(Debug, Clone, Serialize)]
struct Row {
    dataset: String,
    scheme: String,
    workers: usize,
    sources: usize,
    split: String,
    messages: u64,
    p1: f64,
    imbalance_fraction: f64,
    max_imbalance_fraction: f64,
    head_choices: usize,
    messages_per_s: f64,
}

#[derive(Serialize)]
struct Report {
    rows: Vec<Row>,
}

/// Log-normal key weights with `distinct` keys whose σ is set (by
/// bisection, for this seed's draws) so the top key's share is `p1`: the
/// paper's LN1 and LN2 are given by their p1 and key count.
fn calibrated_lognormal(mu: f64, distinct: usize, p1: f64, seed: u64) -> KeySpec {
    let spec = |sigma: f64| KeySpec::LogNormal { mu, sigma, distinct };
    // The same normal draws scaled by σ: the top share grows with σ.
    let (mut low, mut high) = (0.1, 10.0);
    for _ in 0..60 {
        let middle = (low + high) / 2.0;
        if KeySampler::new(&spec(middle), seed).probability(0) < p1 {
            low = middle;
        } else {
            high = middle;
        }
    }
    spec((low + high) / 2.0)
}

fn dataset(form: &str, messages: usize, seed: u64) -> Result<Dataset, Error> {
    let parts: Vec<&str> = form.split(':').collect();
    let spec = match parts[..] {
        ["ln1"] => calibrated_lognormal(1.789, 16_000, 0.147, seed),
        ["ln2"] => calibrated_lognormal(2.245, 1_100, 0.070, seed),
        ["drift", exponent, distinct, phases] => {
            let number = |text: &str| text.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
            let (Some(exponent), Some(distinct), Some(phases)) = (number(exponent), number(distinct), number(phases))
            else {
                return Err(Error::invalid(
                    "--keys",
                    format!("`{form}`: expected drift:<exponent>:<distinct>:<phases>"),
                ));
            };
            return Ok(Dataset::drifting(
                exponent,
                distinct.max(1.0) as usize,
                phases.max(1.0) as usize,
                messages,
                seed,
            ));
        }
        [name, ..] if ["zipf", "mandelbrot", "lognormal"].contains(&name) => form.parse::<KeySpec>()?,
        _ => {
            return Err(Error::invalid(
                "--keys",
                format!(
                    "`{form}`: expected zipf:<exponent>:<distinct>, mandelbrot:<exponent>:<offset>:<distinct>, lognormal:<mu>:<sigma>:<distinct>, ln1, ln2 or drift:<exponent>:<distinct>:<phases>"
                ),
            ))
        }
    };
    let mut data = Dataset::sampled(&spec, messages, seed);
    if let KeySpec::LogNormal { sigma, distinct, .. } = spec
        && (form == "ln1" || form == "ln2")
    {
        data.name = format!("{form} (σ {sigma:.2}, {distinct} keys)");
    }
    Ok(data)
}

fn run(args: Args) -> Result<(), Error> {
    let schemes: Vec<SimScheme> = if args.schemes.is_empty() {
        SimScheme::ALL.to_vec()
    } else {
        args.schemes.iter().map(|s| s.parse()).collect::<Result<_, _>>()?
    };
    if args.workers.contains(&0) || args.sources.contains(&0) {
        return Err(Error::invalid("--workers/--sources", "counts must be positive"));
    }
    let mut datasets = Vec::new();
    if let Some(path) = &args.input {
        datasets.push(Dataset::from_file(path, args.on_error)?);
    }
    if let Some(path) = &args.weights {
        datasets.push(Dataset::from_weights(path, args.messages, args.seed, args.on_error)?);
    }
    let forms: Vec<String> = if args.keys.is_empty() && datasets.is_empty() {
        [
            "ln1",
            "ln2",
            "zipf:1.0:10000",
            "zipf:1.4:10000",
            "zipf:2.0:10000",
            "drift:1.4:10000:5",
        ]
        .map(String::from)
        .to_vec()
    } else {
        args.keys.clone()
    };
    for form in &forms {
        datasets.push(dataset(form, args.messages, args.seed)?);
    }
    if args.salt != 0 {
        datasets.iter_mut().for_each(|data| data.salt(args.salt));
    }
    let split = match args.split {
        Split::Even => "even",
        Split::Uneven => "uneven",
    };
    println!("| dataset | p1 | scheme | workers | sources | imbalance (final, fraction of messages) | max over time | head choices | Mmsg/s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    let mut panels = Vec::new();
    for data in &datasets {
        let p1 = data.p1();
        let mut by_scheme: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        let mut over_time: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for &scheme in &schemes {
            let mut points = Vec::new();
            for &sources in &args.sources {
                for &workers in &args.workers {
                    let started = Instant::now();
                    let outcome = replay(data, scheme, workers, sources, args.split);
                    let rate = data.keys.len() as f64 / started.elapsed().as_secs_f64();
                    println!(
                        "| {} | {p1:.4} | {scheme} | {workers} | {sources} | {:.2e} | {:.2e} | {} | {:.1} |",
                        data.name,
                        outcome.imbalance_fraction,
                        outcome.max_imbalance_fraction,
                        outcome.head_choices,
                        rate / 1e6
                    );
                    if sources == args.sources[0] {
                        points.push((workers as f64, outcome.imbalance_fraction));
                        if data.name.starts_with("drift") && Some(&workers) == args.workers.iter().max() {
                            let series = outcome.series.iter().map(|&(t, v)| (t as f64, v)).collect();
                            over_time.push((scheme.to_string(), series));
                        }
                    }
                    rows.push(Row {
                        dataset: data.name.clone(),
                        scheme: scheme.to_string(),
                        workers,
                        sources,
                        split: split.into(),
                        messages: data.keys.len() as u64,
                        p1,
                        imbalance_fraction: outcome.imbalance_fraction,
                        max_imbalance_fraction: outcome.max_imbalance_fraction,
                        head_choices: outcome.head_choices,
                        messages_per_s: rate,
                    });
                }
            }
            by_scheme.push((scheme.to_string(), points));
        }
        panels.push(Panel {
            title: format!("{} (p1 = {p1:.3}): imbalance at the end vs workers", data.name),
            x_label: "workers".into(),
            log_x: true,
            lines: by_scheme,
        });
        if !over_time.is_empty() {
            panels.push(Panel {
                title: format!(
                    "{}: imbalance over time at {} workers",
                    data.name,
                    args.workers.iter().max().expect("a worker count")
                ),
                x_label: "messages".into(),
                log_x: false,
                lines: over_time,
            });
        }
    }
    if let Some(path) = &args.report {
        write_report(path, &Report { rows })?;
    }
    if let Some(path) = &args.plot {
        write_panels(path, &panels)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("pkg_imbalance: {error}");
            ExitCode::FAILURE
        }
    }
}
