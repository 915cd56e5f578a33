//! Helpers shared by the integration tests that run the example programs.

#![allow(dead_code)] // each test file uses its own subset

pub mod soak;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

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
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Runs example `name` as 2 processes × 2 workers over a hostfile on
/// 127.0.0.1, with `args` and `--report report`; fails the test unless both
/// processes succeed.
pub fn run_two_processes(name: &str, args: &[&str], report: &Path) {
    let hostfile = scratch(&format!("hosts-{name}-{}.txt", free_port()));
    std::fs::write(
        &hostfile,
        format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port()),
    )
    .unwrap();
    let spawn = |process: &str| -> Child {
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "-w",
            "2",
            "-n",
            "2",
            "-p",
            process,
            "--hostfile",
            hostfile.to_str().unwrap(),
            "--quiet",
        ]);
        all.extend(["--report", report.to_str().unwrap()]);
        Command::new(example(name))
            .args(&all)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let second = spawn("1");
    let first = spawn("0");
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
