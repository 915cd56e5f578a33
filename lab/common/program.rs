//! What every example program shares: writing its JSON report, the
//! options every job checks alike, and a quiet end on a closed stdout.

use std::path::Path;

use serde::Serialize;

use crate::common::Error;

/// Writes `report` as pretty JSON to `path`.
pub fn write_report<R: Serialize>(path: &Path, report: &R) -> Result<(), Error> {
    let json = serde_json::to_string_pretty(report).expect("reports serialize");
    std::fs::write(path, json + "\n").map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

/// Writes `report` as its HTML page (`Report::html`) to `path`.
pub fn write_page(path: &Path, report: &equipoise::doctor::Report) -> Result<(), Error> {
    std::fs::write(path, report.html()).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

/// Checks `--work-us`: a finite, non-negative number of microseconds.
pub fn check_work_us(work_us: f64) -> Result<std::time::Duration, Error> {
    if work_us.is_finite() && work_us >= 0.0 {
        Ok(std::time::Duration::from_secs_f64(work_us / 1e6))
    } else {
        Err(Error::invalid(
            "--work-us",
            format!("{work_us} is not a non-negative number"),
        ))
    }
}

/// Lets a closed standard output (`example | head`) end the program quietly,
/// as it ends Unix tools: Rust starts programs with SIGPIPE ignored, so
/// `println!` to a closed pipe panics with "Broken pipe" instead. Call it
/// first thing in `main`.
pub fn exit_quietly_on_closed_stdout() {
    // SAFETY: restores the signal's default disposition; called before any
    // thread exists, so nothing races with it.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// How an example program ends: success, or its error as one line on
/// stderr, prefixed with the program's name, and a failing exit status.
pub fn exit_code(program: &str, result: Result<(), Error>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{program}: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
