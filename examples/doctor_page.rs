//! Renders a saved skew report (`--doctor`'s JSON, from any example, or a
//! program's own `serde_json::to_string(&report)`) as its HTML page: the
//! dataflow drawn, each operator coloured by its busiest worker over the
//! mean, the costliest table and the sampled keys beside it.
//!
//! ```text
//! cargo run --release --example differential -- --join --keys zipf:1.5:100000 -w 4 --doctor report.json
//! cargo run --release --example doctor_page -- report.json report.html
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use equipoise::doctor::Report;
use equipoise_lab::common::program::write_page;
use equipoise_lab::common::Error;

/// A saved skew report, rendered as a page.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The report, as JSON.
    report: PathBuf,
    /// Where to write the page.
    page: PathBuf,
}

fn main() -> ExitCode {
    equipoise_lab::common::program::exit_quietly_on_closed_stdout();
    equipoise_lab::common::program::exit_code("doctor_page", run(Args::parse()))
}

fn run(args: Args) -> Result<(), Error> {
    let text = std::fs::read_to_string(&args.report).map_err(|source| Error::Io {
        path: args.report.clone(),
        source,
    })?;
    let report: Report = serde_json::from_str(&text).map_err(|error| {
        Error::invalid(
            "REPORT",
            format!(
                "{}: not a skew report (line {}, column {}): {error}",
                args.report.display(),
                error.line(),
                error.column()
            ),
        )
    })?;
    write_page(&args.page, &report)
}
