//! Helpers shared by the integration tests: running the example programs,
//! soaks, and feeding differential inputs from lists of updates.

#![allow(dead_code)] // each test file uses its own subset

pub mod feed;
pub mod soak;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use equipoise_lab::common::launch::{self, run_cluster, Shape};

/// The path of example `name`, built by `cargo test` beside the tests.
pub fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/<name>
    let mut path = std::env::current_exe().unwrap();
    path.pop();
    path.pop();
    path.push("examples");
    path.push(name);
    assert!(path.exists(), "build the examples first: {}", path.display());
    path
}

/// A fresh path in this test process's scratch directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("equipoise-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Runs example `name` quietly to completion.
pub fn run_example(name: &str, args: &[&str]) -> Output {
    Command::new(example(name)).args(args).arg("--quiet").output().unwrap()
}

/// A report written by an example.
pub fn report(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The report of the spatial example run with `args` on one static worker
/// (the reference a cluster run must equal), written to `name`.
pub fn one_static_worker(args: &[&str], name: &str) -> serde_json::Value {
    let path = scratch(name);
    let out = run_example(
        "spatial",
        &[args, &["--policy", "static", "--report", path.to_str().unwrap()]].concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    report(&path)
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    launch::free_port().unwrap()
}

/// Runs example `name` as 2 processes × 2 workers over a hostfile on
/// 127.0.0.1, with `args`, quiet, and writes the report to `report`; fails
/// the test unless both processes succeed.
pub fn run_two_processes(name: &str, args: &[&str], report: &Path) {
    let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
    let json = run_cluster(&example(name), &args, Shape::new(2, 2), Duration::from_secs(600))
        .unwrap_or_else(|error| panic!("{name} as 2 processes: {error}"));
    std::fs::write(report, json.to_string()).unwrap();
}
