//! The examples as the cluster benchmark and tests run them: one per
//! capability, at its defaults, with what its report says of throughput,
//! latency and the exactness of its results.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::launch::{run_cluster, Shape};
use crate::common::Error;

/// An example program and the flags it runs with.
#[derive(Debug, Clone)]
pub struct ExampleRun {
    /// The row's name: the example, and any flags added to its defaults.
    pub name: String,
    /// The example's binary name.
    pub program: &'static str,
    /// Its flags, beyond the cluster's (`-w`, `-n`, `-p`, `--hostfile`),
    /// `--quiet` and `--report`.
    pub args: Vec<String>,
    /// What its throughput counts, per second.
    pub unit: &'static str,
    /// What its latency measures.
    pub latency: &'static str,
    figures: fn(&serde_json::Value) -> Option<Figures>,
}

/// What one run's report says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figures {
    /// Records (points, updates) per second.
    pub throughput: f64,
    /// Median epoch latency (the shedding and throttle examples: record
    /// delay), ms.
    pub p50_ms: f64,
    /// Its 99th percentile, ms.
    pub p99_ms: f64,
    /// The digest of the results, where they are deterministic: equal for
    /// every shape.
    pub digest: Option<u64>,
}

fn number(report: &serde_json::Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(report, |value, key| value.get(key))?.as_f64()
}

/// Throughput at `rate`, percentiles under `latency`, digest at `digest`.
fn read(report: &serde_json::Value, rate: f64, latency: &str, digest: Option<&str>) -> Option<Figures> {
    Some(Figures {
        throughput: rate,
        p50_ms: number(report, &[latency, "p50"])?,
        p99_ms: number(report, &[latency, "p99"])?,
        digest: match digest {
            Some(key) => Some(report.get(key)?.as_u64()?),
            None => None,
        },
    })
}

impl ExampleRun {
    /// The five examples at their defaults: the word count (PKG), the
    /// differential count (`--grouping pkg`), the spatial job (SWARM), the
    /// shedding loop and the throttle.
    pub fn all() -> Vec<ExampleRun> {
        let flags = |flags: &[&str]| flags.iter().map(|flag| flag.to_string()).collect();
        vec![
            ExampleRun {
                name: "wordcount".to_string(),
                program: "wordcount",
                args: Vec::new(),
                unit: "records/s",
                latency: "epoch",
                figures: |r| read(r, number(r, &["records_per_s"])?, "latency_ms", Some("counts_digest")),
            },
            ExampleRun {
                name: "differential".to_string(),
                program: "differential",
                args: flags(&["--grouping", "pkg"]),
                unit: "updates/s",
                latency: "epoch",
                figures: |r| read(r, number(r, &["updates_per_s"])?, "latency_ms", Some("counts_digest")),
            },
            ExampleRun {
                name: "spatial".to_string(),
                program: "spatial",
                // One epoch size at every scale compared (the example's
                // default grows with the workers).
                args: flags(&["--batch", "1000"]),
                unit: "points/s",
                latency: "epoch",
                figures: |r| read(r, number(r, &["points_per_s"])?, "latency_ms", Some("matches_digest")),
            },
            ExampleRun {
                name: "shedding".to_string(),
                program: "shedding",
                args: flags(&["run"]),
                unit: "records/s",
                latency: "delay",
                figures: |r| {
                    let rate = number(r, &["processed"])? / number(r, &["duration_s"])?;
                    read(r, rate, "delay_ms", None)
                },
            },
            ExampleRun {
                name: "throttle".to_string(),
                program: "throttle",
                args: Vec::new(),
                unit: "records/s",
                latency: "delay",
                figures: |r| read(r, number(r, &["processed_per_s"])?, "delay_ms", None),
            },
        ]
    }

    /// The same example with `flags` instead of its own (named with them).
    pub fn instead(mut self, flags: &[&str]) -> Self {
        self.args = flags.iter().map(|flag| flag.to_string()).collect();
        self.name = format!("{} {}", self.name, flags.join(" "));
        self
    }

    /// The same run with `extra` flags after its own (named with them).
    pub fn with(mut self, extra: &[&str]) -> Self {
        self.args.extend(extra.iter().map(|flag| flag.to_string()));
        if !extra.is_empty() {
            self.name = format!("{} {}", self.name, extra.join(" "));
        }
        self
    }

    /// Runs it as `shape` from the binaries in `bin_dir`, and reads its report.
    pub fn run(&self, bin_dir: &Path, shape: Shape, timeout: Duration) -> Result<Figures, Error> {
        let program = bin_dir.join(self.program);
        if !program.exists() {
            return Err(Error::Runtime(format!(
                "{} is missing: build the examples first (cargo build --release --examples)",
                program.display()
            )));
        }
        let report = run_cluster(&program, &self.args, shape, timeout)?;
        (self.figures)(&report)
            .ok_or_else(|| Error::Runtime(format!("{}'s report lacks a figure: {report}", self.name)))
    }
}
