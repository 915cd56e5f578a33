//! The examples as the cluster benchmark and tests run them: one per
//! capability, at its defaults, with what its report says of throughput,
//! latency and the exactness of its results.

use std::path::{Path, PathBuf};
use std::process::Command;
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
    /// The same job on timely's and differential's own operators, from the
    /// run's flags (`None`: the example has no such counterpart).
    baseline: Option<Flags>,
}

/// A run's flags from another's.
type Flags = fn(&[String]) -> Vec<String>;

/// `args` without `flags` (each with its value when `valued`) and with `add`.
fn swap(args: &[String], flags: &[(&str, bool)], add: &[&str]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match flags.iter().find(|(flag, _)| arg == flag) {
            Some((_, true)) => {
                args.next();
            }
            Some((_, false)) => {}
            None => kept.push(arg.clone()),
        }
    }
    kept.extend(add.iter().map(|flag| flag.to_string()));
    kept
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
                baseline: Some(|args| swap(args, &[("--grouping", true), ("--slack", true)], &["--timely-exchange"])),
            },
            ExampleRun {
                name: "differential".to_string(),
                program: "differential",
                args: flags(&["--grouping", "pkg"]),
                unit: "updates/s",
                latency: "epoch",
                figures: |r| read(r, number(r, &["updates_per_s"])?, "latency_ms", Some("counts_digest")),
                // Differential's own count() or join().
                baseline: Some(|args| swap(args, &[("--grouping", true), ("--slack", true), ("--skew", false)], &[])),
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
                // A static plan: no coordinator, nothing moves.
                baseline: Some(|args| swap(args, &[("--policy", true)], &["--policy", "static"])),
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
                baseline: None,
            },
            ExampleRun {
                name: "throttle".to_string(),
                program: "throttle",
                args: Vec::new(),
                unit: "records/s",
                latency: "delay",
                figures: |r| read(r, number(r, &["processed_per_s"])?, "delay_ms", None),
                baseline: None,
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

    /// The same job on timely's and differential's own operators, if the
    /// example has one: the word count through timely's `Exchange`,
    /// differential's `count()` or `join()`, the spatial stream on a static
    /// plan with no coordinator.
    pub fn baseline(&self) -> Option<ExampleRun> {
        let args = (self.baseline?)(&self.args);
        Some(ExampleRun {
            name: format!("{} ({})", self.program, args.join(" ")),
            args,
            baseline: None,
            ..self.clone()
        })
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

/// The directory of the release examples, built first with `cargo build
/// --release` and `which` (`--examples`, or `--example NAME`), for a
/// benchmark at `target/release/deps/` to run them.
pub fn built_examples(which: &[&str]) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--quiet"])
        .args(which)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build --release {which:?} failed");
    let mut dir = std::env::current_exe().expect("the benchmark's path");
    // target/release/deps/<benchmark>-… -> target/release/examples
    dir.pop();
    dir.pop();
    dir.push("examples");
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_baseline_is_the_job_on_timelys_own_operators() {
        let flags = |run: &ExampleRun| run.baseline().map(|baseline| baseline.args.join(" "));
        let runs = ExampleRun::all();
        let baselines: Vec<Option<String>> = runs.iter().map(flags).collect();
        assert_eq!(
            baselines,
            [
                Some("--timely-exchange".to_string()),
                Some(String::new()),
                Some("--batch 1000 --policy static".to_string()),
                None,
                None,
            ]
        );
        // Rows with flags of their own keep those that do not choose the operators.
        let join = runs[1]
            .clone()
            .instead(&["--join", "--skew", "--keys", "zipf:1.5:1000"]);
        assert_eq!(flags(&join).unwrap(), "--join --keys zipf:1.5:1000");
        let pkg = runs[0]
            .clone()
            .with(&["--grouping", "dchoices", "--slack", "4", "--batch", "100"]);
        assert_eq!(flags(&pkg).unwrap(), "--batch 100 --timely-exchange");
        let swarm = runs[2].clone().with(&["--policy", "swarm:4", "--round", "8"]);
        assert_eq!(flags(&swarm).unwrap(), "--batch 1000 --round 8 --policy static");
    }
}
